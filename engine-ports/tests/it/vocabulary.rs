//! Vocabulary scenarios: argument parsing, results and parts, caps, projections,
//! modes and raw argument text.

use engine_ports::{
    ContentError, ContentPart, ElicitationAction, EmbeddedBody, EmbeddedResource, Keyword,
    MAX_BINARY_PART_BYTES, PermissionMode, ResourceLink, ToolCall, ToolResult, Verdict,
};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct PathArgs {
    path: String,
}

#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Optional {
    #[serde(default)]
    limit: Option<u32>,
}

#[test]
fn parse_args_reads_objects_and_reports_errors_with_the_tool_name() {
    let ok: PathArgs = ToolCall::new("c1", "Read", r#"{"path":"a"}"#)
        .parse_args()
        .unwrap();
    assert_eq!(ok.path, "a");

    let missing = ToolCall::new("c1", "Read", "")
        .parse_args::<PathArgs>()
        .unwrap_err();
    assert!(missing.message().contains("missing field `path`"), "{missing}");

    let call = ToolCall::new("c1", "Read", "{bad");
    let error = call.parse_args::<PathArgs>().unwrap_err();
    assert!(error.message().contains("line 1 column"), "{error}");
    let result = error.clone().into_result(&call);
    assert!(result.is_error());
    assert_eq!(result.call_id(), "c1");
    assert!(result.content().contains("Read"));
    assert!(result.content().contains("invalid arguments"));
    assert!(result.content().contains(error.message()));

    for empty in ["", "   ", "null", " null "] {
        let call = ToolCall::new("c", "List", empty);
        assert!(call.parse_args::<Optional>().is_ok(), "{empty:?}");
    }
}

#[test]
fn results_have_three_constructors_and_omit_empty_parts() {
    let text = ToolResult::text("c1", "pong");
    assert!(!text.is_error());
    let json = serde_json::to_value(&text).unwrap();
    assert!(json.get("parts").is_none());
    assert_eq!(
        json,
        serde_json::json!({"call_id": "c1", "content": "pong", "is_error": false})
    );

    assert!(ToolResult::error("c1", "x").is_error());

    let parts = ToolResult::with_parts("c1", "summary", vec![ContentPart::text("block")]).unwrap();
    assert_eq!(
        (parts.content(), parts.parts().len(), parts.is_error()),
        ("summary", 1, false)
    );

    let link = ContentPart::ResourceLink(ResourceLink {
        uri: "https://example.com/r.json".to_owned(),
        name: Some("r".to_owned()),
        ..ResourceLink::default()
    });
    let mixed = ToolResult::with_parts("c1", "two", vec![ContentPart::text("hello"), link]).unwrap();
    let round: ToolResult = serde_json::from_str(&serde_json::to_string(&mixed).unwrap()).unwrap();
    assert_eq!(round, mixed);
}

#[test]
fn parts_are_capped() {
    let text = |n: usize| ContentPart::text("x".repeat(n));
    assert!(ToolResult::with_parts("c", "", vec![text(25_600)]).is_ok());
    let too_long = ToolResult::with_parts("c", "", vec![text(25_601)]).unwrap_err();
    assert!(matches!(
        too_long,
        ContentError::TextPartTooLarge { bytes: 25_601, .. }
    ));
    assert!(too_long.to_string().contains("25600"));

    let blob = |n: usize| {
        ContentPart::EmbeddedResource(EmbeddedResource {
            uri: "r".to_owned(),
            mime: None,
            body: EmbeddedBody::Blob(vec![0; n]),
        })
    };
    assert!(ToolResult::with_parts("c", "", vec![blob(MAX_BINARY_PART_BYTES)]).is_ok());
    assert!(matches!(
        ToolResult::with_parts("c", "", vec![blob(MAX_BINARY_PART_BYTES + 1)]),
        Err(ContentError::BinaryPartTooLarge { .. })
    ));
    let image = ContentPart::Image {
        mime: "image/png".to_owned(),
        data: vec![0; MAX_BINARY_PART_BYTES + 1],
    };
    assert!(ToolResult::with_parts("c", "", vec![image]).is_err());

    assert!(ToolResult::with_parts("c", "", vec![text(25_600); 819]).is_ok());
    assert!(matches!(
        ToolResult::with_parts("c", "", vec![text(25_600); 820]),
        Err(ContentError::ResultTooLarge { .. })
    ));
    let links: Vec<ContentPart> = (0..100)
        .map(|i| {
            ContentPart::ResourceLink(ResourceLink {
                uri: format!("https://example.com/{i}"),
                ..ResourceLink::default()
            })
        })
        .collect();
    assert!(ToolResult::with_parts("c", "", links).is_ok());
    assert!(ToolResult::with_parts("c", "", Vec::new()).is_ok());

    for bad in [
        r#"{"kind":"embedded_resource","uri":"r","text":"t","blob":"AA=="}"#,
        r#"{"kind":"embedded_resource","uri":"r"}"#,
    ] {
        assert!(serde_json::from_str::<ContentPart>(bad).is_err(), "{bad}");
    }
    let oversized = serde_json::json!({
        "call_id": "c", "content": "", "is_error": false,
        "parts": [{"kind": "text", "text": "x".repeat(25_601)}]
    });
    assert!(
        serde_json::from_value::<ToolResult>(oversized).is_err(),
        "deserialization validates caps"
    );
}

#[test]
fn text_projections_follow_the_one_rule() {
    let link = |title: Option<&str>, name: Option<&str>| {
        ContentPart::ResourceLink(ResourceLink {
            uri: "https://example.com/r.json".to_owned(),
            title: title.map(str::to_owned),
            name: name.map(str::to_owned),
            ..ResourceLink::default()
        })
        .text_projection()
    };
    assert_eq!(
        link(Some("Title"), Some("r")),
        "Title (https://example.com/r.json)"
    );
    assert_eq!(link(None, Some("r")), "r (https://example.com/r.json)");
    assert_eq!(link(None, None), "https://example.com/r.json");
    let embedded = |body| {
        ContentPart::EmbeddedResource(EmbeddedResource {
            uri: "https://example.com/r.bin".to_owned(),
            mime: None,
            body,
        })
        .text_projection()
    };
    assert_eq!(embedded(EmbeddedBody::Text("inline".to_owned())), "inline");
    assert_eq!(
        embedded(EmbeddedBody::Blob(vec![1, 2])),
        "https://example.com/r.bin (application/octet-stream)"
    );
    let image = ContentPart::Image {
        mime: "image/png".to_owned(),
        data: vec![1],
    };
    assert_eq!(image.text_projection(), "");
    let result = ToolResult::with_parts(
        "c",
        "summary",
        vec![ContentPart::text("a"), image, ContentPart::text("b")],
    )
    .unwrap();
    assert_eq!(result.text_projection(), "a\nb");
    assert_eq!(ToolResult::text("c", "plain").text_projection(), "plain");
}

#[test]
fn modes_parse_exactly_and_raw_args_round_trip() {
    assert_eq!(
        "acceptEdits".parse::<PermissionMode>().unwrap(),
        PermissionMode::AcceptEdits
    );
    assert_eq!("plan".parse::<PermissionMode>().unwrap(), PermissionMode::Plan);
    let error = "accept".parse::<PermissionMode>().unwrap_err();
    assert!(error.to_string().contains("\"accept\""));
    assert_eq!(
        serde_json::to_string(&PermissionMode::AcceptEdits).unwrap(),
        "\"acceptEdits\""
    );
    for mode in PermissionMode::ALL {
        assert_eq!(mode.to_string().parse::<PermissionMode>().unwrap(), mode);
    }

    let call = ToolCall::new("c1", "Read", "{bad");
    let json = serde_json::to_string(&call).unwrap();
    assert_eq!(json, r#"{"id":"c1","name":"Read","args":"{bad"}"#);
    assert_eq!(serde_json::from_str::<ToolCall>(&json).unwrap(), call);
    assert_eq!(call.args_value(), serde_json::json!("{bad"));
    assert_eq!(ToolCall::new("c", "R", "").args_value(), serde_json::json!({}));
    assert_eq!(
        ToolCall::new("c", "R", r#"{"z":1,"a":2}"#)
            .args_value()
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["z", "a"],
        "key order is kept"
    );
}

#[test]
fn skill_and_command_name_validators() {
    use engine_ports::{valid_command_name, valid_skill_asset_name, valid_skill_name};
    for ok in [
        "SKILL_NOTES.md",
        "references/api.md",
        "a.b/c.d",
        ".env.example",
        "a/b/c/d/e.md",
    ] {
        assert!(valid_skill_asset_name(ok), "{ok}");
    }
    for bad in [
        "",
        "../x",
        "a/../b",
        "a/..",
        "/abs",
        "a\\b",
        "a/./b",
        ".",
        "..",
        "a/",
        "a//b",
        "a\u{2028}b",
        "a\tb",
    ] {
        assert!(!valid_skill_asset_name(bad), "{bad:?}");
    }
    for ok in ["review", "a", "1skill", "a--b", "a-", "my_skill-2"] {
        assert!(valid_skill_name(ok), "{ok}");
    }
    let long = format!("a{}", "b".repeat(64));
    for bad in [
        "",
        "Review",
        "-lead",
        "_lead",
        "has.dot",
        "my skill",
        long.as_str(),
    ] {
        assert!(!valid_skill_name(bad), "{bad:?}");
    }
    for ok in ["review", "fix-1", "a_b.c", "X9"] {
        assert!(valid_command_name(ok), "{ok}");
    }
    for bad in ["", "has space", "slash/y", "uni±code", "tab\tx", "/lead"] {
        assert!(!valid_command_name(bad), "{bad:?}");
    }
}

#[test]
fn keyword_words_are_the_serde_wire_names() {
    fn check<K: Keyword + serde::Serialize>() {
        for value in K::ALL {
            assert_eq!(serde_json::to_value(value).unwrap(), value.word());
            assert!(K::from_word(value.word()).is_some());
        }
    }
    check::<PermissionMode>();
    check::<Verdict>();
    check::<ElicitationAction>();
    assert_eq!(Verdict::expected(), "allow_once, allow_always, deny");
    assert_eq!(ElicitationAction::expected(), "accept, decline, cancel");
}
