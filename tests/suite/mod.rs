mod runtime;
mod gemini_wire;
