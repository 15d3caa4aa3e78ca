//! Fuzz target: an MCP `tools/call` result as arbitrary JSON, decoded as the client
//! does (typed, else leniently) and mapped onto the model's text and typed parts
//! under a small output cap, which the text must respect.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        const CAP: usize = 200;
        for result in adapter_mcp::fuzzing::map_call_result(data, CAP)
            .into_iter()
            .flatten()
        {
            assert!(result.content().len() <= CAP, "{}", result.content().len());
        }
    });
}
