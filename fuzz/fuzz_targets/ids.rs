//! Fuzz target: the `session:`/`turn:`/`event:` ID parser.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    moraine_mcp::fuzzing::id(data);
});
