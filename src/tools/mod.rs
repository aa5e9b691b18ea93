//! Tools: the [`Tool`] trait a tool implements (one file per tool), the type-erased
//! handle the Scheduler uses, and the registry. Each registered tool gets its own
//! [`ToolActor`](crate::tools::host::ToolActor) on its own arbiter.

pub mod activate_skill;
pub mod ask_user;
pub mod background_tools;
pub mod complete_task;
pub mod corrector;
pub mod dynamic;
pub mod enter_plan_mode;
pub mod exit_plan_mode;
#[cfg(test)]
mod facts_tests;
pub mod file_edit;
pub mod file_reader;
pub mod file_walk;
pub mod folder_structure;
pub mod glob;
pub mod grep;
pub mod host;
pub mod internal_docs;
pub mod invoke;
pub mod invoke_agent;
pub mod jit;
pub mod kept_definitions;
pub mod list_directory;
pub mod plan_mode;
pub mod protected;
pub mod read_file;
pub mod read_many_files;
pub mod registry;
pub mod replace;
pub mod save_memory;
pub mod shell;
pub mod synthetic;
#[cfg(feature = "test-hooks")]
pub mod test_note;
#[cfg(feature = "test-hooks")]
pub mod test_tools;
pub mod update_topic;
pub mod wait_for_previous;
pub mod web_fetch;
#[cfg(feature = "test-hooks")]
pub mod word_count;
pub mod workspace_listing;
pub mod write_file;
pub mod write_todos;

use std::path::PathBuf;
use std::sync::Arc;

use actix::Addr;
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::platform::context_files::ContextFiles;
use crate::platform::filesystem::FsClient;
use crate::platform::workspace::Workspace;
use crate::protocol::content::FunctionDeclaration;
use crate::protocol::EventSink;
use crate::protocol::{AllowKey, ConfirmationDetails, ToolFacts, ToolKind, ToolOutput, UiEvent};
use crate::providers::ModelClient;
use crate::settings::Settings;
use crate::tools::corrector::Corrector;

pub use plan_mode::{FixedMode, SessionMode};
pub use registry::ToolRegistry;

/// Everything a tool may use, shared by all calls of a session.
pub struct Services {
    pub workspace: Arc<Workspace>,
    pub fs: FsClient,
    pub settings: Arc<Settings>,
    pub model: Arc<dyn ModelClient>,
    pub model_name: String,
    pub session_id: String,
    /// Repairs failed edits; `None` when `edit.correction` is off.
    pub corrector: Option<Addr<Corrector>>,
    /// Background shell processes of the session (killed when it ends).
    pub processes: Arc<shell::background::BackgroundProcesses>,
    /// The session's scratch directory (saved tool outputs, ...), outside the workspace.
    pub temp_dir: PathBuf,
    /// The context files (AGENTS.md, ...): loaded at start, found later near touched paths.
    pub context: Arc<ContextFiles>,
    /// The session's hooks (BeforeTool, AfterTool, Notification run in the Scheduler).
    pub hooks: crate::protocol::hooks::HookClient,
    /// Who reads and writes through these services, as another agent is told
    /// ("the main session", "agent generalist-2 (generalist)").
    pub author: String,
    /// Who of the session's agent tree read and wrote which file last, shared by the
    /// whole tree.
    pub ledger: Arc<crate::platform::filesystem::ledger::FileLedger>,
    /// Starts subagents for `invoke_agent` (set once the session is built; none when
    /// agents are off or the tree is as deep as `agents.max_depth` allows).
    pub agents: std::sync::OnceLock<Arc<dyn invoke_agent::AgentLauncher>>,
    /// The subagent these services serve; `None` for a main session.
    pub agent: Option<Arc<invoke_agent::AgentSeat>>,
    /// The session's approval mode, read and switched the way `Op::SetApprovalMode`
    /// switches it (`enter_plan_mode`, `exit_plan_mode`, writes in plan mode).
    pub mode: Arc<dyn SessionMode>,
}

/// The context of one call.
/// The key of the data [`ToolContext::check_approved`]'s refusal carries, by which the
/// Scheduler knows to ask the user again.
const CHANGED_AFTER_APPROVAL: &str = "changed_after_approval";

/// Whether a result's data is [`ToolContext::check_approved`]'s refusal.
pub fn is_changed_after_approval(data: &serde_json::Value) -> bool {
    data.get(CHANGED_AFTER_APPROVAL) == Some(&serde_json::Value::Bool(true))
}

#[derive(Clone)]
pub struct ToolContext {
    pub services: Arc<Services>,
    pub call_id: String,
    pub cancel: CancellationToken,
    events: Option<EventSink>,
    /// Set once the call has started a change that cannot be taken back (a write):
    /// a cancellation after that waits for the call and reports what it did.
    committed: Arc<std::sync::atomic::AtomicBool>,
    /// The hash of the file's content as the approved diff showed it, when the user
    /// approved this call's edit: the edit must start from exactly that content.
    pub approved_original: Option<[u8; 32]>,
    /// The sandbox the call's commands run in when its approval chose one: a command
    /// that runs without asking because it looks read-only gets `ReadOnly`. `None`:
    /// the session's `sandbox.mode`.
    pub sandbox: Option<crate::platform::sandbox::SandboxMode>,
    /// The user's answer when it is more than yes or no
    /// ([`ApprovalDecision::Answered`](crate::protocol::ApprovalDecision::Answered)'s
    /// payload: `ask_user`'s answers, `exit_plan_mode`'s verdict).
    pub answer: Option<Value>,
}

impl ToolContext {
    pub fn new(
        services: Arc<Services>,
        call_id: String,
        cancel: CancellationToken,
        events: Option<EventSink>,
    ) -> Self {
        Self {
            services,
            call_id,
            cancel,
            events,
            committed: Arc::default(),
            approved_original: None,
            sandbox: None,
            answer: None,
        }
    }

    /// Hands the call the user's answer ([`ToolContext::answer`]).
    pub fn with_answer(mut self, answer: Option<Value>) -> Self {
        self.answer = answer;
        self
    }

    /// Runs the call's commands in `mode` instead of the session's `sandbox.mode`
    /// (`None`: the session's).
    pub fn with_sandbox(mut self, mode: Option<crate::platform::sandbox::SandboxMode>) -> Self {
        self.sandbox = mode;
        self
    }

    /// Shows a warning to the user (stderr in headless runs).
    pub fn warn(&self, message: impl Into<String>) {
        if let Some(events) = &self.events {
            events.do_send(UiEvent::Warning(message.into()));
        }
    }

    /// Binds the call to the content its approved diff was computed from.
    pub fn with_approved_original(mut self, hash: Option<[u8; 32]>) -> Self {
        self.approved_original = hash;
        self
    }

    /// `Err` with a clear error when the user approved a diff of other content than
    /// `original` (the file changed after the approval).
    pub fn check_approved(
        &self,
        path: &std::path::Path,
        original: &str,
    ) -> Result<(), Box<ToolOutput>> {
        match self.approved_original {
            Some(hash)
                if hash != crate::platform::filesystem::content_hash(original.as_bytes()) =>
            {
                let msg = format!("The file {} changed after this edit was approved, so the approved edit was not written. Read the file again and propose the edit against its current content.", path.display());
                Err(Box::new(
                    ToolOutput::error(
                        crate::protocol::ToolErrorKind::FileChangedOnDisk,
                        msg,
                        "Error: the file changed after approval; the edit was not written.",
                    )
                    .with_data(serde_json::json!({ CHANGED_AFTER_APPROVAL: true })),
                ))
            }
            _ => Ok(()),
        }
    }

    /// Marks the point of no return (called right before a write starts).
    pub fn commit(&self) {
        self.committed
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The flag [`ToolContext::commit`] sets.
    pub fn committed_flag(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.committed.clone()
    }

    /// Tells the front end what the call is waiting for (the spinner shows it).
    pub fn waiting(&self, what: crate::protocol::WaitingFor) {
        if let Some(events) = &self.events {
            events.do_send(UiEvent::Waiting { what, seconds: 0 });
        }
    }

    /// Forwards live output (a running command's output, ...) to the front end.
    pub fn live_output(&self, chunk: impl Into<String>) {
        if let Some(events) = &self.events {
            events.do_send(UiEvent::ToolOutputChunk {
                call_id: self.call_id.clone(),
                chunk: chunk.into(),
            });
        }
    }
}

/// The paths a call reads and writes, for the Scheduler's conflict rule: calls of one
/// batch run at once unless one writes a path another touches.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Touched {
    pub reads: Vec<PathBuf>,
    pub writes: Vec<PathBuf>,
}

/// A tool's own view of whether a call may run without asking (e.g. a known-safe,
/// read-only shell command).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyHint {
    Allow,
    Ask,
    /// Ask in every mode but yolo, whatever the allow rules say (writes into Troupe's
    /// or gemini-cli's own configuration directories).
    Protected,
}

/// A tool. Implement this in one file under `src/tools/` and add one line to
/// [`registry::register_builtin`]; the tool then gets its own actor, schema validation,
/// confirmation and cancellation.
pub trait Tool: Send + Sync + 'static {
    /// The parameters, deserialised after schema validation.
    type Params: DeserializeOwned + Clone + Send + Sync + 'static;

    /// The name the model calls.
    fn name(&self) -> &'static str;
    /// The name shown to the user.
    fn display_name(&self) -> &'static str;
    /// What the tool does: reads only (`Read`, `Search`), edits files (`Edit`, `Delete`,
    /// `Move`), runs commands (`Execute`), reaches the network (`Fetch`), keeps notes
    /// (`Think`) or something else (`Other`). Decides the default approval policy.
    fn kind(&self) -> ToolKind;

    /// How ACP labels the tool's calls; by default its [`Tool::kind`].
    fn acp_kind(&self) -> ToolKind {
        self.kind()
    }

    /// What the key of an allow rule for this tool (`tool(key)`) names, matched against
    /// the call's [`Tool::approval_keys`]; by default a path.
    fn allow_key(&self) -> AllowKey {
        AllowKey::Path
    }

    /// Whether identical calls in one model answer run once (every copy gets the one
    /// answer) and the same call succeeding again right after is a repeat the model is
    /// told about. True by default: a built-in tool's effects are known, and the same
    /// call asked for twice in one answer is a repetition, not a plan.
    fn run_once(&self) -> bool {
        true
    }

    /// Whether the answer depends only on the files, so the same call again with
    /// nothing changed in between answers the same (loop detection calls a read again
    /// a repeat). False by default.
    fn answer_depends_on_files_only(&self) -> bool {
        false
    }

    /// The argument that names the one file a call edits, when the tool is an edit:
    /// undoing a failed turn, checkpoints and the small profile's turns that ask for no
    /// change treat its calls as edits. `None` (the default): not an edit.
    fn edited_file_arg(&self) -> Option<&'static str> {
        None
    }

    /// Optional parameters a compact declaration (`tools.compact_declarations`) keeps,
    /// because the tool's own errors tell the model to set them. None by default.
    fn compact_keeps(&self) -> &'static [&'static str] {
        &[]
    }

    /// A boolean parameter that makes a call append its content to the file, declared
    /// only when a call of the tool was cut at the output limit and the model is asked
    /// to write the file in parts (the tool accepts it always). None by default.
    fn append_arg(&self) -> Option<&'static str> {
        None
    }

    /// The methods above as plain data, for the registry's
    /// [`ToolFactsTable`](crate::protocol::ToolFactsTable)
    /// (not meant to be overridden).
    fn facts(&self) -> ToolFacts {
        ToolFacts {
            kind: self.kind(),
            acp_kind: self.acp_kind(),
            allow_key: self.allow_key(),
            run_once: self.run_once(),
            answer_depends_on_files_only: self.answer_depends_on_files_only(),
            edited_file_arg: self.edited_file_arg(),
            compact_keeps: self.compact_keeps(),
            subagents_only: self.subagents_only(),
            runs_alone: self.runs_alone(),
            main_session_only: self.main_session_only(),
            append_arg: self.append_arg(),
            offered: self.offered(),
            interactive_only: self.interactive_only(),
        }
    }

    /// In which approval modes the tool is declared to the model; always by default
    /// (`enter_plan_mode` outside plan mode, `exit_plan_mode` in it).
    fn offered(&self) -> crate::protocol::Offered {
        crate::protocol::Offered::Always
    }

    /// Whether the tool is declared only when a person answers the session's
    /// questions (`ask_user`, which gemini-cli leaves out of a non-interactive run).
    /// False by default.
    fn interactive_only(&self) -> bool {
        false
    }

    /// The conversation starts over (`/clear`, another session resumed): a tool that
    /// keeps state about it forgets it (`update_topic`'s topic, as gemini-cli resets it
    /// with a new session). Nothing by default.
    fn conversation_restarted(&self) {}

    /// Whether only a main session is offered the tool: gemini-cli gives subagents
    /// every tool but `update_topic` (the chapter of the session is the main agent's).
    /// False by default.
    fn main_session_only(&self) -> bool {
        false
    }

    /// Whether a call of the tool runs alone: it starts after every earlier call of its
    /// model answer has finished, and the calls after it wait for it (gemini-cli's
    /// sequential calls: `update_topic`). False by default; a call asking for it with
    /// `wait_for_previous: true` runs alone too, and edits wait as
    /// [`Tool::edited_file_arg`] says.
    fn runs_alone(&self) -> bool {
        false
    }

    /// Whether the tool's declaration offers the optional `wait_for_previous` parameter
    /// (added after the tool's own properties). True by default, as gemini-cli 0.61
    /// declares it for every tool built on its base declaration; its core tools, whose
    /// declarations are written out per model family, do not carry it, and Troupe's
    /// say `false` to match. Every call may set it, declared or not.
    fn declares_wait_for_previous(&self) -> bool {
        true
    }

    /// Whether only subagents are offered the tool (`complete_task`). False by default.
    fn subagents_only(&self) -> bool {
        false
    }

    /// The longest one call may run, given the session's `tools.call_timeout_secs`; by
    /// default that. A tool that keeps its own limits (`invoke_agent`) says more.
    fn time_limit(&self, session_limit: std::time::Duration) -> std::time::Duration {
        session_limit
    }
    /// The description sent to the model.
    fn description(&self) -> String;
    /// The JSON schema of the parameters sent to the model.
    fn schema(&self) -> Value;

    /// Older parameter names accepted and renamed before validation: `(old, new)`.
    fn aliases(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Checks beyond the schema; the error text goes to the model.
    fn validate(&self, _params: &Self::Params, _services: &Services) -> Result<(), String> {
        Ok(())
    }

    /// Paths read and written, for ordering conflicting calls.
    fn touched(&self, _params: &Self::Params, _services: &Services) -> Touched {
        Touched::default()
    }

    /// A per-call override of the approval policy.
    fn policy_hint(&self, _params: &Self::Params) -> Option<PolicyHint> {
        None
    }

    /// [`Tool::policy_hint`] for hints that look at the workspace (paths a command
    /// reads, a write into `.troupe/`); by default the plain hint.
    fn policy_hint_in(&self, params: &Self::Params, _services: &Services) -> Option<PolicyHint> {
        self.policy_hint(params)
    }

    /// A hint that needs the file system (the shell tool's glob check): computed on
    /// the FileSystem pool before the call's approval, it replaces
    /// [`Tool::policy_hint_in`]'s. `None` (the default): that hint stands.
    fn policy_hint_settled(
        &self,
        _params: &Self::Params,
        _services: &Services,
    ) -> Option<BoxFuture<'static, Option<PolicyHint>>> {
        None
    }

    /// The tool's own approval policy for this call, replacing the built-in one
    /// (`engine::policy::decide`): a function of the approval mode and whether a
    /// person answers, worked out from the call as prepared. `None` (the default):
    /// the built-in policy decides.
    fn decider(&self, _params: &Self::Params, _services: &Services) -> Option<Decider> {
        None
    }

    /// What "allow for this session" remembers for this call (a file, a command
    /// prefix); empty means the whole tool.
    fn approval_keys(&self, _params: &Self::Params, _services: &Services) -> Vec<String> {
        Vec::new()
    }

    /// What to show the user before running; `None` runs without asking (e.g. an edit
    /// that cannot apply, whose error `execute` will report).
    fn confirmation(
        &self,
        _params: &Self::Params,
        _ctx: &ToolContext,
    ) -> BoxFuture<'static, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }

    /// The arguments after the user edited the proposal in an external editor.
    fn modified_args(&self, _args: &Value, _edited_content: &str) -> Option<Value> {
        None
    }

    /// Runs the call. Errors are results (`ToolOutput::error`), not panics.
    fn execute(&self, params: Self::Params, ctx: ToolContext) -> BoxFuture<'static, ToolOutput>;
}

/// A tool's own policy for one call ([`Tool::decider`]): given the approval mode and
/// whether a person answers, its decision (`None`: the built-in policy's).
pub type Decider = Box<
    dyn Fn(crate::protocol::ApprovalMode, bool) -> Option<crate::engine::policy::PolicyDecision>
        + Send
        + Sync,
>;

/// Renames legacy parameter names to the current ones (when the current is absent).
pub fn apply_aliases(args: &Value, aliases: &[(&str, &str)]) -> Value {
    let mut args = args.clone();
    if let Some(map) = args.as_object_mut() {
        for (old, new) in aliases {
            if !map.contains_key(*new) {
                if let Some(v) = map.remove(*old) {
                    map.insert((*new).to_string(), v);
                }
            }
        }
    }
    args
}

/// `file_filtering_options` of list_directory and read_many_files.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize)]
pub struct FileFilteringOptions {
    #[serde(default)]
    pub respect_git_ignore: Option<bool>,
    #[serde(default)]
    pub respect_gemini_ignore: Option<bool>,
}

impl FileFilteringOptions {
    /// Unset options default to true.
    pub fn resolve(self) -> crate::platform::ignore_rules::FilterOptions {
        crate::platform::ignore_rules::FilterOptions {
            respect_git_ignore: self.respect_git_ignore.unwrap_or(true),
            respect_gemini_ignore: self.respect_gemini_ignore.unwrap_or(true),
        }
    }
}

/// The declaration of a tool as sent to the model.
pub fn declaration_of<T: Tool>(tool: &T) -> FunctionDeclaration {
    FunctionDeclaration {
        name: tool.name().to_string(),
        description: tool.description(),
        parameters_json_schema: match tool.declares_wait_for_previous() {
            true => wait_for_previous::declared(tool.schema()),
            false => tool.schema(),
        },
    }
}
