//! Fuzz target: the request bodies of `mecated serve` (create-session, prompt,
//! approve, elicit with its content check) from raw bytes; every refusal is a 4xx
//! answer.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let check = |outcome: Result<(), (u16, String)>| {
            if let Err((status, _message)) = outcome {
                assert!((400..500).contains(&status), "{status}");
            }
        };
        check(app::fuzzing::create_session_body(data).map(drop));
        check(app::fuzzing::prompt_body(data).map(drop));
        check(app::fuzzing::approve_body(data).map(drop));
        check(app::fuzzing::elicit_body(data).map(drop));
    });
}
