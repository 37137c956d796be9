//! The `babel` binary: see `babel --help`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
