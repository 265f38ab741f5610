//! The module graph's strongly connected components (Tarjan's algorithm):
//! each one with more than one module is an import cycle.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::path::Path;

use crate::Edge;

/// Modules that import each other, directly or through others: a strongly
/// connected component of the module graph with more than one module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cycle {
    /// Its modules, sorted (`crate::a::b`).
    pub modules: Vec<String>,
    /// One shortest loop through its first module, which ends where it
    /// starts: `[a, b, a]`.
    pub example: Vec<String>,
    /// Every edge between two of its modules, with what caused it: the
    /// `use` items and paths to change.
    pub edges: Vec<Edge>,
}

/// A path that causes an edge, in one file, with the lines it is on.
type Cause<'c> = (&'c Path, &'c str, Vec<usize>);

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "import cycle between {} modules: {}",
            self.modules.len(),
            self.modules.join(", ")
        )?;
        writeln!(f, "  for example {}", self.example.join(" -> "))?;
        writeln!(f, "  edges between them (file:lines: path):")?;
        // Per pair of modules, each path once, with every line it is on.
        let mut pairs: Vec<(&str, &str, Vec<Cause<'_>>)> = Vec::new();
        for e in &self.edges {
            if pairs.last().is_none_or(|p| (p.0, p.1) != (&e.from, &e.to)) {
                pairs.push((&e.from, &e.to, Vec::new()));
            }
            let Some((_, _, causes)) = pairs.last_mut() else {
                continue;
            };
            match causes.iter_mut().find(|c| (c.0, c.1) == (&e.file, &e.path)) {
                Some(cause) => cause.2.push(e.line),
                None => causes.push((&e.file, &e.path, vec![e.line])),
            }
        }
        for (from, to, causes) in pairs {
            writeln!(f, "  {from} -> {to}")?;
            for (file, path, lines) in causes {
                let lines: Vec<String> = lines.iter().map(ToString::to_string).collect();
                writeln!(f, "      {}:{}: {path}", file.display(), lines.join(","))?;
            }
        }
        Ok(())
    }
}

/// The cycles among `edges` (sorted, as they come from the graph).
pub(crate) fn cycles(edges: &[Edge]) -> Vec<Cycle> {
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for edge in edges {
        graph.entry(&edge.from).or_default().insert(&edge.to);
        graph.entry(&edge.to).or_default();
    }
    let mut found: Vec<Cycle> = components(&graph)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|mut modules| {
            modules.sort_unstable();
            let inside: BTreeSet<&str> = modules.iter().copied().collect();
            let example = shortest_loop(modules[0], &graph, &inside);
            Cycle {
                modules: modules.iter().map(|m| m.to_string()).collect(),
                example,
                edges: edges
                    .iter()
                    .filter(|e| inside.contains(e.from.as_str()) && inside.contains(e.to.as_str()))
                    .cloned()
                    .collect(),
            }
        })
        .collect();
    found.sort_by(|a, b| a.modules.cmp(&b.modules));
    found
}

/// The strongly connected components of `graph` (Tarjan).
fn components<'g>(graph: &BTreeMap<&'g str, BTreeSet<&'g str>>) -> Vec<Vec<&'g str>> {
    #[derive(Default)]
    struct State<'g> {
        next: usize,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        found: Vec<Vec<&'g str>>,
    }
    fn connect<'g>(v: &'g str, graph: &BTreeMap<&'g str, BTreeSet<&'g str>>, s: &mut State<'g>) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        for &w in graph.get(v).into_iter().flatten() {
            let reached = if !s.index.contains_key(w) {
                connect(w, graph, s);
                s.low[w]
            } else if s.on_stack.contains(w) {
                s.index[w]
            } else {
                continue;
            };
            if reached < s.low[v] {
                s.low.insert(v, reached);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.found.push(component);
        }
    }
    let mut state = State::default();
    for &v in graph.keys() {
        if !state.index.contains_key(v) {
            connect(v, graph, &mut state);
        }
    }
    state.found
}

/// A shortest path from `start` back to itself through `inside` (a
/// component, so there is one), breadth first.
fn shortest_loop(
    start: &str,
    graph: &BTreeMap<&str, BTreeSet<&str>>,
    inside: &BTreeSet<&str>,
) -> Vec<String> {
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &w in graph.get(v).into_iter().flatten() {
            if !inside.contains(w) || came_from.contains_key(w) {
                continue;
            }
            came_from.insert(w, v);
            if w == start {
                let mut path = vec![start.to_string()];
                let mut at = v;
                while at != start {
                    path.push(at.to_string());
                    at = came_from[at];
                }
                path.push(start.to_string());
                path.reverse();
                return path;
            }
            queue.push_back(w);
        }
    }
    vec![start.to_string()]
}
