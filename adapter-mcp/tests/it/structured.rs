//! MCP structured output against a real server (the Python SDK's `elicit_server.py`):
//! a declared `outputSchema` checks every successful result's `structuredContent`,
//! a mismatch or a missing value is a model-visible error naming the failing JSON
//! path, and an unusable schema leaves the tool usable with one WARN.

use crate::support::capture::Capture;
use crate::support::{catalog_of, connect_all, http_config, run};

#[tokio::test]
async fn structured_results_are_checked_against_the_output_schema() {
    let Some(peer) = test_peers::elicit_server("structured_results_are_checked_against_the_output_schema")
    else {
        return;
    };
    let capture = Capture::start();
    let manager = connect_all(vec![http_config("py", &format!("{}/mcp", peer.base_url()))]).await;
    let catalog = catalog_of(&manager).await;

    let good = run(&catalog, "mcp__py__measure", r#"{"mode":"good"}"#).await;
    assert!(!good.is_error(), "{good:?}");
    assert!(
        good.content().contains(r#"{"answer":42,"label":"ok"}"#),
        "{good:?}"
    );

    let bad = run(&catalog, "mcp__py__measure", r#"{"mode":"bad"}"#).await;
    assert!(bad.is_error(), "{bad:?}");
    assert!(
        bad.content().starts_with(
            "MCP tool mcp__py__measure (server \"py\") returned structuredContent that does not match its outputSchema: "
        ),
        "{bad:?}"
    );
    assert!(
        bad.content()
            .contains(r#"at /answer: "forty-two" is not of type "integer""#),
        "{bad:?}"
    );
    assert!(
        bad.content().contains(r#"at /label: 7 is not of type "string""#),
        "{bad:?}"
    );
    assert!(bad.parts().is_empty(), "a refused result carries no parts");

    let missing = run(&catalog, "mcp__py__measure", r#"{"mode":"missing"}"#).await;
    assert_eq!(
        missing.content(),
        "MCP tool mcp__py__measure (server \"py\") declares an outputSchema but its result has no structuredContent"
    );
    assert!(missing.is_error());

    // The schema that is not JSON Schema: usable, unchecked, one WARN at listing.
    let loose = run(&catalog, "mcp__py__loose", "{}").await;
    assert!(!loose.is_error(), "{loose:?}");
    assert!(loose.content().contains(r#"{"anything":true}"#), "{loose:?}");
    let warns = capture.warns_with("outputSchema");
    assert_eq!(warns.len(), 1, "{warns:?}");
    assert!(warns[0].message.contains("\"loose\""), "{warns:?}");
    assert!(warns[0].message.contains("not checked"), "{warns:?}");
    manager.close().await.unwrap();
}
