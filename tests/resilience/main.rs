//! The reliability and security suites: the service under hostile input, faults, overload and
//! abuse, on the real engine over real HTTP on 127.0.0.1. Every loop is bounded in count and
//! time. One module per concern; `http` holds a regression test for each HTTP defect found by
//! fuzzing, overload and fault injection.

#[path = "../common/mod.rs"]
mod common;

mod crash;
mod engine_loss;
mod fuzz;
mod hostile_files;
mod http;
mod overload;
mod own_engine;
mod pushes;
mod secrets;
mod start_stop;
