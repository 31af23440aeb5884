//! The `moraine-mcp` binary; everything lives in the library (see `cli`).

fn main() -> std::process::ExitCode {
    moraine_mcp::cli::main()
}
