//! Fuzz target: whole agent logs of every harness through the ingest adapters.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    moraine_mcp::fuzzing::agent_log(data);
});
