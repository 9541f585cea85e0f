fn main() {
    std::process::exit(pathosd::cli::main(std::env::args_os().collect()));
}
