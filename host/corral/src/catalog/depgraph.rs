//! The tool dependency graph (TnsAI's `ToolDependencyGraph`): an edge
//! from each tool to every tool it `depends-on` (WIT 0.2.0), built with
//! `petgraph`. A catalog refuses cycles at load; the graph gives a
//! topological order (dependencies first), each tool's transitive
//! dependencies, and Graphviz DOT (`corral graph --dot`). corral never calls
//! a dependency by itself: the graph informs ordering, discovery and
//! operators.

use std::collections::{BTreeMap, BTreeSet};

use petgraph::Direction;
use petgraph::algo::{tarjan_scc, toposort};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::Dfs;

use crate::model::spec::ToolSpec;

/// The `depends-on` edges between the tools of a catalog.
#[derive(Debug, Clone, Default)]
pub struct ToolGraph {
    graph: DiGraph<String, ()>,
    index: BTreeMap<String, NodeIndex>,
    /// `(tool, dependency)` pairs naming a tool that is not loaded.
    missing: Vec<(String, String)>,
}

impl ToolGraph {
    /// The graph of `specs`.
    pub fn from_specs<'a>(specs: impl Iterator<Item = &'a ToolSpec>) -> Self {
        let specs: Vec<&ToolSpec> = specs.collect();
        let mut graph = DiGraph::new();
        let mut index = BTreeMap::new();
        for spec in &specs {
            index.insert(spec.name.clone(), graph.add_node(spec.name.clone()));
        }
        let mut missing = Vec::new();
        for spec in &specs {
            let from = index[&spec.name];
            for dep in &spec.metadata.depends_on {
                match index.get(dep) {
                    Some(&to) => {
                        graph.update_edge(from, to, ());
                    }
                    None => missing.push((spec.name.clone(), dep.clone())),
                }
            }
        }
        Self {
            graph,
            index,
            missing,
        }
    }

    /// Every cycle, each as its tools in a cycle order (the first repeated
    /// at the end), sorted.
    pub fn cycles(&self) -> Vec<Vec<String>> {
        let mut cycles: Vec<Vec<String>> = tarjan_scc(&self.graph)
            .into_iter()
            .filter(|scc| scc.len() > 1 || self.graph.contains_edge(scc[0], scc[0]))
            .map(|scc| {
                let mut names: Vec<String> = scc.iter().map(|&n| self.graph[n].clone()).collect();
                names.sort();
                names.push(names[0].clone());
                names
            })
            .collect();
        cycles.sort();
        cycles
    }

    /// Every tool, each after the tools it depends on.
    ///
    /// # Errors
    /// A tool of a cycle, when there is one (a loaded catalog has none).
    pub fn topological_order(&self) -> Result<Vec<String>, String> {
        let order = toposort(&self.graph, None).map_err(|c| self.graph[c.node_id()].clone())?;
        // Edges point at dependencies, so the reversed order lists them first.
        Ok(order
            .into_iter()
            .rev()
            .map(|n| self.graph[n].clone())
            .collect())
    }

    /// Every tool `tool` depends on, directly or not, sorted; empty for an
    /// unknown tool.
    pub fn transitive_dependencies(&self, tool: &str) -> Vec<String> {
        let Some(&start) = self.index.get(tool) else {
            return Vec::new();
        };
        let mut found = BTreeSet::new();
        let mut dfs = Dfs::new(&self.graph, start);
        while let Some(node) = dfs.next(&self.graph) {
            if node != start {
                found.insert(self.graph[node].clone());
            }
        }
        found.into_iter().collect()
    }

    /// The tools that depend on `tool` directly, sorted.
    pub fn dependents(&self, tool: &str) -> Vec<String> {
        let Some(&node) = self.index.get(tool) else {
            return Vec::new();
        };
        let mut names: Vec<String> = self
            .graph
            .neighbors_directed(node, Direction::Incoming)
            .map(|n| self.graph[n].clone())
            .collect();
        names.sort();
        names
    }

    /// `(tool, dependency)` pairs whose dependency is not loaded.
    pub fn missing(&self) -> &[(String, String)] {
        &self.missing
    }

    /// The graph in Graphviz DOT: one node per tool that has an edge, an
    /// arrow from each tool to what it depends on.
    pub fn to_dot(&self) -> String {
        let mut out = String::from("digraph tools {\n    rankdir=LR;\n");
        for edge in self.graph.edge_indices() {
            if let Some((from, to)) = self.graph.edge_endpoints(edge) {
                out.push_str(&format!(
                    "    \"{}\" -> \"{}\";\n",
                    self.graph[from], self.graph[to]
                ));
            }
        }
        out.push_str("}\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_sandbox::ToolMetadata;

    fn spec(name: &str, deps: &[&str]) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: "d".into(),
            parameters: serde_json::json!({"type": "object"}),
            output_schema: None,
            metadata: {
                let mut metadata = ToolMetadata::new("");
                metadata.depends_on = deps.iter().map(|d| d.to_string()).collect();
                metadata
            },
        }
    }

    #[test]
    fn order_transitive_dependencies_and_cycles() {
        let specs = [
            spec("report", &["fetch", "parse"]),
            spec("parse", &["fetch"]),
            spec("fetch", &[]),
            spec("lonely", &["ghost"]),
        ];
        let graph = ToolGraph::from_specs(specs.iter());
        assert!(graph.cycles().is_empty());
        let order = graph.topological_order().expect("acyclic");
        let at = |t: &str| order.iter().position(|o| o == t).expect("listed");
        assert!(at("fetch") < at("parse") && at("parse") < at("report"));
        assert_eq!(graph.transitive_dependencies("report"), ["fetch", "parse"]);
        assert_eq!(graph.dependents("fetch"), ["parse", "report"]);
        assert_eq!(
            graph.missing(),
            [("lonely".to_string(), "ghost".to_string())]
        );
        assert!(graph.to_dot().contains("\"report\" -> \"parse\";"));

        let cyclic = [
            spec("a", &["b"]),
            spec("b", &["c"]),
            spec("c", &["a"]),
            spec("d", &["d"]),
        ];
        let graph = ToolGraph::from_specs(cyclic.iter());
        assert_eq!(graph.cycles(), [vec!["a", "b", "c", "a"], vec!["d", "d"]]);
        assert!(graph.topological_order().is_err());
    }
}
