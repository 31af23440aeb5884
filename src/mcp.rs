//! The rmcp server handler: publishes the tools and hands every call to [`Tools`].

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tracing::Instrument as _;

use crate::auth::Caller;
use crate::tools::{INSTRUCTIONS, Tools};

/// Bytes of a client-supplied tool name that logs and error messages show.
const MAX_SHOWN_NAME: usize = 64;

/// One handler per MCP session (or per request when stateless); all share the same [`Tools`].
#[derive(Clone)]
pub(crate) struct McpServer {
    tools: Arc<Tools>,
}

impl McpServer {
    pub(crate) fn new(tools: Arc<Tools>) -> Self {
        Self { tools }
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("moraine-mcp", env!("CARGO_PKG_VERSION"))
                    .with_title("Moraine session search"),
            )
            .with_instructions(INSTRUCTIONS.as_str())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.tools.published().to_vec(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools
            .published()
            .iter()
            .find(|t| t.name == name)
            .cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Over HTTP the auth layer names the caller; over stdio the caller is the local user.
        let caller = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .cloned()
            .unwrap_or_else(Caller::stdio);
        let name = request.name.to_string();
        // A tool name is client text of any length: logs and errors show a bounded prefix.
        let shown = &name[..crate::text::floor_char_boundary(&name, MAX_SHOWN_NAME)];
        let span = tracing::info_span!("tool_call", tool = %shown, caller = %caller.name);
        match self
            .tools
            .call(&name, request.arguments, &caller)
            .instrument(span)
            .await
        {
            Some(result) => Ok(result.into()),
            None => Err(ErrorData::invalid_params(
                format!(
                    "tool not found: {shown}{}",
                    if shown.len() < name.len() { "…" } else { "" }
                ),
                None,
            )),
        }
    }
}
