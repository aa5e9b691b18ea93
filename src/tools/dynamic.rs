//! Tools that come and go while a session runs (each MCP server's tools): grouped by
//! their source, replaced as a whole when the source's list changes. Calls already
//! running keep the handle they were prepared with.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use super::registry::ToolHandle;
use crate::protocol::content::FunctionDeclaration;

#[derive(Default)]
struct Table {
    /// Source (server name) → its tools, in the order the source listed them.
    by_source: BTreeMap<String, Vec<Arc<dyn ToolHandle>>>,
    by_name: HashMap<String, Arc<dyn ToolHandle>>,
}

/// The dynamic part of the registry.
#[derive(Default)]
pub struct DynamicTools {
    table: RwLock<Table>,
}

impl DynamicTools {
    /// Replaces every tool of `source`. A name another source already holds stays
    /// that source's (gemini-cli lets the later one overwrite it): the tool is left out
    /// and returned with the holder, `(tool name, holding source)`, for the caller to
    /// tell the user.
    pub fn replace(&self, source: &str, tools: Vec<Arc<dyn ToolHandle>>) -> Vec<(String, String)> {
        let Ok(mut table) = self.table.write() else {
            return Vec::new();
        };
        let held: HashMap<&str, &str> = table
            .by_source
            .iter()
            .filter(|(s, _)| s.as_str() != source)
            .flat_map(|(s, list)| list.iter().map(move |t| (t.name(), s.as_str())))
            .collect();
        let mut refused = Vec::new();
        let mut kept = Vec::new();
        for tool in tools {
            match held.get(tool.name()) {
                Some(holder) => refused.push((tool.name().to_string(), holder.to_string())),
                None => kept.push(tool),
            }
        }
        table.by_source.insert(source.to_string(), kept);
        let by_name: HashMap<String, Arc<dyn ToolHandle>> = table
            .by_source
            .values()
            .flatten()
            .map(|t| (t.name().to_string(), t.clone()))
            .collect();
        table.by_name = by_name;
        refused
    }

    /// Removes every tool of `source`.
    pub fn remove(&self, source: &str) {
        if let Ok(mut table) = self.table.write() {
            if let Some(tools) = table.by_source.remove(source) {
                for t in tools {
                    let same = table
                        .by_name
                        .get(t.name())
                        .is_some_and(|cur| Arc::ptr_eq(cur, &t));
                    if same {
                        table.by_name.remove(t.name());
                    }
                }
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn ToolHandle>> {
        self.table.read().ok()?.by_name.get(name).cloned()
    }

    pub fn names(&self) -> Vec<String> {
        self.table
            .read()
            .map(|t| t.by_name.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Declarations grouped by source (sources in name order), each tool once.
    pub fn declarations(&self) -> Vec<FunctionDeclaration> {
        let Ok(table) = self.table.read() else {
            return Vec::new();
        };
        table
            .by_source
            .values()
            .flatten()
            .filter(|t| {
                table
                    .by_name
                    .get(t.name())
                    .is_some_and(|cur| Arc::ptr_eq(cur, t))
            })
            .map(|t| t.declaration())
            .collect()
    }
}
