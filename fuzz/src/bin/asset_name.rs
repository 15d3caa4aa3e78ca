//! Fuzz target: the logical asset-name validator (and the skill and command name
//! grammars). A name it accepts never escapes its skill directory.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let Ok(name) = std::str::from_utf8(data) else {
            return;
        };
        if engine_ports::valid_skill_asset_name(name) {
            let path = std::path::Path::new(name);
            assert!(path.is_relative(), "{name:?}");
            assert!(
                path.components()
                    .all(|c| matches!(c, std::path::Component::Normal(_))),
                "{name:?}"
            );
        }
        let _ = engine_ports::valid_skill_name(name);
        let _ = engine_ports::valid_command_name(name);
    });
}
