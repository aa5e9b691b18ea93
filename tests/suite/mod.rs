mod runtime;
mod gemini_wire;
mod openai_wire;
