mod gemini_wire;
mod history_rules;
mod local_llm;
mod openai_wire;
mod record_replay;
mod runtime;
