//! Fuzz target: the mock-script parser (`--mock-script FILE`); errors name the file
//! and the turn, never panic.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let Ok(json) = std::str::from_utf8(data) else {
            return;
        };
        if let Err(error) = adapter_llm::MockScript::from_json(json, "fuzz.json") {
            let _ = error.to_string();
        }
    });
}
