//! blazec: the command line over blaze-compiler. Argument parsing (clap), printing and exit
//! codes live here and nowhere else; every command is a file of `commands/` that parses its
//! arguments, calls the library's stages and prints what they return.
//!
//! A user's own binary gets every command for its own models by implementing [`Catalog`] and
//! calling [`main_with`] (examples/user-model does).
pub mod cli;
pub mod commands;
pub mod faults;
pub mod model_args;
pub mod progress;

pub use blaze_compiler::catalog::{Catalog, Resolver};
pub use cli::main_with;
pub use model_args::{ModelArgs, resolve_model};
