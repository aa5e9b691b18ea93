//! The context budget of one tool result: text past its share of the model's context
//! window (`model.compression.tool_result_share`) is saved whole under the session's
//! temp directory (in the troupe home, as `run_shell_command` does), and the model gets
//! the head and tail with gemini-cli's truncation note naming that file.

use crate::engine::context_budget::result_char_budget;
use crate::protocol::LlmContent;
use crate::tools::shell::format::head_tail_excerpt;
use crate::tools::shell::safe_file_part;
use crate::tools::Services;

/// True when `content` is text over the budget of one result (checked before
/// [`fit_result`] is awaited, so a call in flight reserves no room for its state).
pub fn over_budget(content: &LlmContent, services: &Services) -> bool {
    let LlmContent::Text(text) = content else {
        return false;
    };
    let max = budget_of(services);
    // Bytes bound characters: most results never need counting.
    text.len() > max && text.chars().count() > max
}

/// The most characters one result may keep.
fn budget_of(services: &Services) -> usize {
    let compression = &services.settings.model.compression;
    let window = compression.token_limit(&services.model_name);
    result_char_budget(window, compression.tool_result_share)
}

/// `content`, cut to the budget when it is text over it.
pub async fn fit_result(
    content: LlmContent,
    tool: &str,
    call_id: &str,
    services: &Services,
) -> LlmContent {
    let LlmContent::Text(text) = content else {
        return content;
    };
    let max = budget_of(services);
    if text.chars().count() <= max {
        return LlmContent::Text(text);
    }
    let dir = services.temp_dir.join("tool-outputs");
    let file = dir.join(format!(
        "{}_{}.txt",
        safe_file_part(tool),
        safe_file_part(call_id)
    ));
    // Boxed: only an oversized result needs this state, not every call in flight.
    let saved = Box::pin(async {
        tokio::fs::create_dir_all(&dir).await?;
        tokio::fs::write(&file, text.as_bytes()).await
    })
    .await;
    if let Err(e) = saved {
        tracing::warn!(error = %e, file = %file.display(), "cannot save a full tool result");
    }
    tracing::info!(
        tool,
        chars = text.len(),
        max,
        "tool result cut to its context budget"
    );
    LlmContent::Text(head_tail_excerpt(&text, max, &file))
}
