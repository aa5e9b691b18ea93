//! `--trace FILE`: every call of a run as a Chrome trace-event timeline (opens in
//! Perfetto or chrome://tracing). Each call is one complete span (`"ph": "X"`, category
//! `call`) on the track of the tool actor that ran it, with one nested span per state it
//! went through (category `state`: validating, awaiting_approval, scheduled, executing).
//! Calls that overlap on one actor are put on separate lanes of that actor, so spans on
//! a track always nest.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use serde_json::{json, Value};

use crate::frontends::headless::CallRecord;
use crate::protocol::CallStatus;

/// The track of calls that never reached a tool actor (refused, invalid, cancelled).
const SCHEDULER_TRACK: &str = "scheduler";

/// Writes the trace of `calls` to `path`.
pub fn write(path: &Path, calls: &[CallRecord]) -> std::io::Result<()> {
    let trace = trace_events(calls);
    std::fs::write(path, serde_json::to_vec(&trace).unwrap_or_default())
}

/// The trace-event JSON object of `calls` (times in µs from the first call).
pub fn trace_events(calls: &[CallRecord]) -> Value {
    let origin = calls
        .iter()
        .filter_map(|c| c.timeline.validating.or(c.timeline.done))
        .min();
    let Some(origin) = origin else {
        return json!({"traceEvents": [], "displayTimeUnit": "ms"});
    };
    let micros = |t: Instant| t.saturating_duration_since(origin).as_secs_f64() * 1e6;
    let mut order: Vec<&CallRecord> = calls.iter().collect();
    order.sort_by_key(|c| c.timeline.validating.unwrap_or(origin));

    let mut events = vec![
        json!({"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
        "args": {"name": "troupe"}}),
    ];
    // Per actor: the end time of each of its lanes; per (actor, lane): its tid.
    let mut lanes: HashMap<String, Vec<f64>> = HashMap::new();
    let mut tids: HashMap<(String, usize), u64> = HashMap::new();
    for call in order {
        let t = &call.timeline;
        let start = micros(t.validating.unwrap_or(origin));
        let end = micros(t.done.unwrap_or(origin)).max(start);
        let actor = t.actor.as_deref().unwrap_or(SCHEDULER_TRACK).to_string();
        // A subagent's calls go on its own track, inside the span of the
        // `invoke_agent` call that ran it (which leaves its lane free).
        let (track, outer) = match (
            &call.agent,
            call.name == crate::tools::invoke_agent::INVOKE_AGENT,
        ) {
            (Some(agent), outer) => (format!("agent {agent}"), outer),
            (None, _) => (actor.clone(), false),
        };
        let actor_lanes = lanes.entry(track.clone()).or_insert_with(|| vec![0.0]);
        let lane = match (
            outer,
            actor_lanes.iter().position(|&free_at| free_at <= start),
        ) {
            (true, _) => 0,
            (false, Some(i)) => i,
            (false, None) => {
                actor_lanes.push(0.0);
                actor_lanes.len() - 1
            }
        };
        if !outer {
            actor_lanes[lane] = end;
        }
        let actor = track;
        let next_tid = tids.len() as u64 + 1;
        let tid = *tids.entry((actor.clone(), lane)).or_insert_with(|| {
            events.push(
                json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": next_tid,
                "args": {"name": format!("{actor} · lane {lane}")}}),
            );
            next_tid
        });
        events.push(json!({
            "name": call.name, "cat": "call", "ph": "X", "pid": 1, "tid": tid,
            "ts": start, "dur": end - start,
            "args": {"call_id": call.call_id, "status": status_name(call.status), "actor": actor},
        }));
        // The states, each until the next one recorded (or the end).
        let marks = [
            ("validating", t.validating),
            ("awaiting_approval", t.awaiting_approval),
            ("scheduled", t.scheduled),
            ("executing", t.executing),
        ];
        let present: Vec<(&str, f64)> = marks
            .iter()
            .filter_map(|(name, at)| at.map(|at| (*name, micros(at).clamp(start, end))))
            .collect();
        for (i, (name, from)) in present.iter().enumerate() {
            let to = present.get(i + 1).map(|(_, at)| *at).unwrap_or(end);
            events.push(
                json!({"name": name, "cat": "state", "ph": "X", "pid": 1, "tid": tid,
                "ts": from, "dur": (to - from).max(0.0)}),
            );
        }
    }
    json!({"traceEvents": events, "displayTimeUnit": "ms"})
}

fn status_name(status: CallStatus) -> &'static str {
    match status {
        CallStatus::Success => "success",
        CallStatus::Error => "error",
        CallStatus::Cancelled => "cancelled",
        CallStatus::Validating => "validating",
        CallStatus::AwaitingApproval => "awaiting_approval",
        CallStatus::Scheduled => "scheduled",
        CallStatus::Executing => "executing",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::CallTimeline;
    use std::time::Duration;

    fn record(id: &str, start: Instant, offset_us: u64, actor: Option<&str>) -> CallRecord {
        let at = |us: u64| Some(start + Duration::from_micros(offset_us + us));
        CallRecord {
            call_id: id.into(),
            name: "read_file".into(),
            status: CallStatus::Success,
            ok: true,
            duration: Duration::from_micros(30),
            timeline: CallTimeline {
                validating: at(0),
                awaiting_approval: None,
                scheduled: at(10),
                executing: at(20),
                done: at(50),
                actor: actor.map(Into::into),
            },
            agent: None,
        }
    }

    #[test]
    fn overlapping_calls_of_one_actor_get_lanes_and_states_nest() {
        let start = Instant::now();
        let calls = vec![
            record("a", start, 0, Some("read_file#0")),
            record("b", start, 5, Some("read_file#0")),
            record("c", start, 100, Some("read_file#0")),
            record("d", start, 0, None),
        ];
        let trace = trace_events(&calls);
        let events = trace["traceEvents"].as_array().unwrap();
        let spans: Vec<&Value> = events.iter().filter(|e| e["cat"] == "call").collect();
        assert_eq!(spans.len(), 4);
        let tid_of = |id: &str| {
            spans.iter().find(|e| e["args"]["call_id"] == id).unwrap()["tid"]
                .as_u64()
                .unwrap()
        };
        assert_ne!(tid_of("a"), tid_of("b"), "overlapping calls share no lane");
        assert_eq!(tid_of("a"), tid_of("c"), "a free lane is reused");
        for span in &spans {
            let (ts, end) = (
                span["ts"].as_f64().unwrap(),
                span["ts"].as_f64().unwrap() + span["dur"].as_f64().unwrap(),
            );
            let states: Vec<&Value> = events
                .iter()
                .filter(|e| e["cat"] == "state" && e["tid"] == span["tid"])
                .filter(|e| e["ts"].as_f64().unwrap() >= ts && e["ts"].as_f64().unwrap() < end)
                .collect();
            assert_eq!(states.len(), 3, "{span}");
            for s in states {
                assert!(s["ts"].as_f64().unwrap() + s["dur"].as_f64().unwrap() <= end + 1e-6);
            }
        }
    }

    #[test]
    fn a_subagents_calls_nest_in_its_invoke_agent_span_on_a_track_of_its_own() {
        let start = Instant::now();
        let mut outer = record("p1", start, 0, Some("invoke_agent#0"));
        outer.name = crate::tools::invoke_agent::INVOKE_AGENT.into();
        outer.agent = Some("generalist-1".into());
        outer.timeline.done = Some(start + std::time::Duration::from_micros(500));
        let mut inner = record("c1", start, 100, Some("read_file#0"));
        inner.agent = Some("generalist-1".into());
        let main = record("m1", start, 100, Some("read_file#0"));
        let trace = trace_events(&[outer, inner, main]);
        let events = trace["traceEvents"].as_array().unwrap();
        let tid_of = |id: &str| {
            let span = events
                .iter()
                .find(|e| e["cat"] == "call" && e["args"]["call_id"] == id);
            span.unwrap()["tid"].as_u64().unwrap()
        };
        assert_eq!(
            tid_of("p1"),
            tid_of("c1"),
            "the child's call nests in its agent's span"
        );
        assert_ne!(
            tid_of("c1"),
            tid_of("m1"),
            "the main session's call is on its actor's track"
        );
        let named = events
            .iter()
            .any(|e| e["ph"] == "M" && e["args"]["name"] == "agent generalist-1 · lane 0");
        assert!(named, "the agent's track is named");
    }
}
