//! The service foundation on the real engine over real HTTP, one module per subject:
//! migrations, both MCP protocol styles and stdio, health and metrics, Host/Origin checks and
//! tokens, limits, and the command line.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Mcp, TestServer, config_for, fresh_db, send};
use moraine_mcp::config::TokenConfig;
use moraine_mcp::db::gate::{self, WhenMigrating};
use moraine_mcp::db::{Db, DbError};
use moraine_mcp::embedded::Engine;
use moraine_mcp::metrics::Metrics;
use moraine_mcp::migrate::{self, MigrateError};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BIN: &str = env!("CARGO_BIN_EXE_moraine-mcp");

mod access;
mod commands;
mod limits;
mod migrations;
mod observability;
mod protocol;
