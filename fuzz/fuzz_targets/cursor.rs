//! Fuzz target: `list_sessions` cursors, as sent and as signed bodies.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    moraine_mcp::fuzzing::cursor(data);
});
