//! A case's fault rules: which frames ([`Selector`]), what to do with them ([`Action`]), until
//! when a held frame waits ([`Condition`]). They travel as JSON in the control channel, so a
//! [`RuleSet`] can only be built through validation ([`RuleSet::new`], and serde goes through the
//! same check): its size, nesting and names are bounded, so matching one frame costs at most
//! [`MAX_NODES`] steps whatever a request says.

use std::collections::HashSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::classify::{CmKind, Direction, OpcodeClass};

/// Most rules in one set.
pub const MAX_RULES: usize = 64;
/// Longest rule, release or case name, in bytes (names end up in pcapng comments).
pub const MAX_NAME_LEN: usize = 64;
/// Longest case name, in bytes.
pub const MAX_CASE_LEN: usize = 128;
/// Deepest nesting of `All`/`AnyOf`/`Forwarded` (a leaf is depth 1).
pub const MAX_DEPTH: usize = 8;
/// Most items in one `All`/`AnyOf` list.
pub const MAX_LIST_LEN: usize = 32;
/// Most selector and condition nodes in a whole set: what one frame's matching costs at most.
pub const MAX_NODES: usize = 1024;

/// An RPC XID as a case names it. A case rarely knows the XIDs the client will pick, so it can name
/// a call by its order instead: `Nth(1)` is the XID of the first distinct call (an XID not seen
/// before) the client sends after the rule set was installed, `Nth(2)` the second, and so on.
/// Until that call has been seen, selectors naming it match nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Xid {
    Is(u32),
    /// 1-based.
    Nth(u32),
}

/// Which frames a rule acts on. Only RoCE and CM frames are ever selected: ARP, neighbour
/// discovery and the control channel always pass untouched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Selector {
    Any,
    Direction(Direction),
    Opcode(OpcodeClass),
    /// The BTH destination QP.
    Qpn(u32),
    Psn(u32),
    Cm(CmKind),
    /// Every packet of the client's first transmission of call `xid` (the Send whose XID had not
    /// been seen in an earlier call), including RC-level retransmissions of those packets.
    CallOf {
        xid: Xid,
    },
    /// Every packet of the client's later transmissions of call `xid` (a new Send carrying an XID
    /// already seen: the RPC-level retransmission, possibly on a new connection).
    RetransmitOf {
        xid: Xid,
    },
    /// Every packet of the server's Send carrying the reply to `xid`, RC retransmissions included.
    ReplyTo {
        xid: Xid,
    },
    /// RC ACKs from the client that acknowledge the whole reply to `xid` (ACK PSN at or past the
    /// reply's last PSN, on the connection's server QP), until one such ACK has been forwarded.
    AckOfReplyTo {
        xid: Xid,
    },
    /// RDMA READ responses the client sends on the call's connection between call `xid` and its
    /// reply. Approximation: the relay does not tie a READ request to the call it serves, so with
    /// several calls outstanding on one connection the responses match each of them.
    ReadResponsesFor {
        xid: Xid,
    },
    /// The first packet of a Send message sent again by its sender's RC layer (the same PSN
    /// again: a packet or its ACK was lost); combine with `ReplyTo` or `CallOf` to name whose.
    RcRetransmission,
    All(Vec<Selector>),
    AnyOf(Vec<Selector>),
}

/// Until when a held frame waits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Condition {
    /// Until a frame matching the selector has been forwarded (frames forwarded after this one was
    /// held; frames released from hold count too).
    Forwarded(Selector),
    /// For this long after it was held.
    For { micros: u64 },
    /// Until a control request `Release { name }` arrives. A release lets go of the frames held
    /// at that moment; frames held later wait for the next one.
    Release { name: String },
    /// Until any of these holds.
    AnyOf(Vec<Condition>),
}

/// What to do with a selected frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    /// Drop the next `times` selected frames (at least 1), then stop selecting.
    Drop { times: u32 },
    /// Forward the frame this much later.
    Delay { micros: u64 },
    /// Forward the frame when the condition holds.
    Hold { until: Condition },
    /// Forward the frame twice, back to back.
    Duplicate,
    /// Forward the frame right after the next frame forwarded the same way (any frame, ARP
    /// included, and frames released from hold too).
    Reorder,
    /// Forward the frame at once with a marker line: a rule whose hits a case watches (the
    /// frame went by) without touching the traffic.
    Mark,
}

/// One rule: the first rule (in set order) that selects a frame and still has hits left acts on
/// it; the others do not see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    pub name: String,
    pub select: Selector,
    pub action: Action,
    /// Stop selecting after this many frames (`None`: no limit other than `Drop`'s `times`).
    #[serde(default)]
    pub max_hits: Option<u32>,
}

/// A validated set of rules for one case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "UncheckedRuleSet")]
pub struct RuleSet {
    case: String,
    rules: Vec<Rule>,
}

/// The JSON shape of a [`RuleSet`] before validation.
#[derive(Deserialize)]
struct UncheckedRuleSet {
    case: String,
    rules: Vec<Rule>,
}

impl TryFrom<UncheckedRuleSet> for RuleSet {
    type Error = RuleError;

    fn try_from(raw: UncheckedRuleSet) -> Result<Self, RuleError> {
        RuleSet::new(raw.case, raw.rules)
    }
}

/// Why a rule set was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuleError {
    TooManyRules {
        count: usize,
        max: usize,
    },
    CaseTooLong {
        len: usize,
        max: usize,
    },
    NameTooLong {
        len: usize,
        max: usize,
    },
    /// Empty, or containing control characters (names go into capture comments).
    BadName {
        name: String,
    },
    DuplicateRuleName {
        name: String,
    },
    TooDeep {
        rule: String,
        max: usize,
    },
    ListTooLong {
        rule: String,
        len: usize,
        max: usize,
    },
    EmptyList {
        rule: String,
    },
    TooManyNodes {
        max: usize,
    },
    /// `Xid::Nth(0)`: calls are counted from 1.
    NthZero {
        rule: String,
    },
    DropTimesZero {
        rule: String,
    },
    MaxHitsZero {
        rule: String,
    },
    /// The JSON did not describe a rule set.
    Json {
        message: String,
    },
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleError::TooManyRules { count, max } => {
                write!(f, "{count} rules, at most {max} allowed")
            }
            RuleError::CaseTooLong { len, max } => {
                write!(f, "case name of {len} bytes, at most {max} allowed")
            }
            RuleError::NameTooLong { len, max } => {
                write!(f, "name of {len} bytes, at most {max} allowed")
            }
            RuleError::BadName { name } => {
                write!(f, "name {name:?} is empty or has control characters")
            }
            RuleError::DuplicateRuleName { name } => write!(f, "two rules are named {name:?}"),
            RuleError::TooDeep { rule, max } => {
                write!(f, "rule {rule:?} nests deeper than {max}")
            }
            RuleError::ListTooLong { rule, len, max } => {
                write!(f, "rule {rule:?} has a list of {len} items, at most {max}")
            }
            RuleError::EmptyList { rule } => write!(f, "rule {rule:?} has an empty list"),
            RuleError::TooManyNodes { max } => {
                write!(
                    f,
                    "the rule set has more than {max} selectors and conditions"
                )
            }
            RuleError::NthZero { rule } => {
                write!(f, "rule {rule:?} names Nth(0); calls are counted from 1")
            }
            RuleError::DropTimesZero { rule } => {
                write!(f, "rule {rule:?} drops 0 times")
            }
            RuleError::MaxHitsZero { rule } => write!(f, "rule {rule:?} has max_hits 0"),
            RuleError::Json { message } => write!(f, "not a rule set: {message}"),
        }
    }
}

impl std::error::Error for RuleError {}

impl RuleSet {
    /// Validate and build a rule set.
    pub fn new(case: String, rules: Vec<Rule>) -> Result<RuleSet, RuleError> {
        if case.len() > MAX_CASE_LEN {
            return Err(RuleError::CaseTooLong {
                len: case.len(),
                max: MAX_CASE_LEN,
            });
        }
        if case.chars().any(char::is_control) {
            return Err(RuleError::BadName { name: case });
        }
        if rules.len() > MAX_RULES {
            return Err(RuleError::TooManyRules {
                count: rules.len(),
                max: MAX_RULES,
            });
        }
        let mut names = HashSet::new();
        let mut nodes = 0usize;
        for rule in &rules {
            check_name(&rule.name)?;
            if !names.insert(rule.name.as_str()) {
                return Err(RuleError::DuplicateRuleName {
                    name: rule.name.clone(),
                });
            }
            let mut check = Check {
                rule: &rule.name,
                nodes: &mut nodes,
            };
            check.selector(&rule.select, 1)?;
            match &rule.action {
                Action::Drop { times: 0 } => {
                    return Err(RuleError::DropTimesZero {
                        rule: rule.name.clone(),
                    })
                }
                Action::Hold { until } => check.condition(until, 1)?,
                Action::Drop { .. }
                | Action::Delay { .. }
                | Action::Duplicate
                | Action::Reorder
                | Action::Mark => {}
            }
            if rule.max_hits == Some(0) {
                return Err(RuleError::MaxHitsZero {
                    rule: rule.name.clone(),
                });
            }
        }
        Ok(RuleSet { case, rules })
    }

    /// Parse and validate a rule set from JSON.
    pub fn from_json(json: &[u8]) -> Result<RuleSet, RuleError> {
        serde_json::from_slice(json).map_err(|e| RuleError::Json {
            message: crate::bounded_text(&e.to_string()),
        })
    }

    /// The case these rules belong to.
    pub fn case(&self) -> &str {
        &self.case
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Every `Xid::Nth(n)` the rules name (at most [`MAX_NODES`] values).
    pub(crate) fn nth_values(&self) -> HashSet<u32> {
        let mut out = HashSet::new();
        for rule in &self.rules {
            collect_nth_selector(&rule.select, &mut out);
            if let Action::Hold { until } = &rule.action {
                collect_nth_condition(until, &mut out);
            }
        }
        out
    }
}

fn check_name(name: &str) -> Result<(), RuleError> {
    if name.len() > MAX_NAME_LEN {
        return Err(RuleError::NameTooLong {
            len: name.len(),
            max: MAX_NAME_LEN,
        });
    }
    if name.is_empty() || name.chars().any(char::is_control) {
        return Err(RuleError::BadName {
            name: name.to_string(),
        });
    }
    Ok(())
}

/// Walks one rule's selector and condition trees, counting nodes against the set's total.
struct Check<'a> {
    rule: &'a str,
    nodes: &'a mut usize,
}

impl Check<'_> {
    fn node(&mut self, depth: usize) -> Result<(), RuleError> {
        *self.nodes += 1;
        if *self.nodes > MAX_NODES {
            return Err(RuleError::TooManyNodes { max: MAX_NODES });
        }
        if depth > MAX_DEPTH {
            return Err(RuleError::TooDeep {
                rule: self.rule.to_string(),
                max: MAX_DEPTH,
            });
        }
        Ok(())
    }

    fn list(&self, len: usize) -> Result<(), RuleError> {
        if len == 0 {
            return Err(RuleError::EmptyList {
                rule: self.rule.to_string(),
            });
        }
        if len > MAX_LIST_LEN {
            return Err(RuleError::ListTooLong {
                rule: self.rule.to_string(),
                len,
                max: MAX_LIST_LEN,
            });
        }
        Ok(())
    }

    fn xid(&self, xid: Xid) -> Result<(), RuleError> {
        if xid == Xid::Nth(0) {
            return Err(RuleError::NthZero {
                rule: self.rule.to_string(),
            });
        }
        Ok(())
    }

    fn selector(&mut self, selector: &Selector, depth: usize) -> Result<(), RuleError> {
        self.node(depth)?;
        match selector {
            Selector::CallOf { xid }
            | Selector::RetransmitOf { xid }
            | Selector::ReplyTo { xid }
            | Selector::AckOfReplyTo { xid }
            | Selector::ReadResponsesFor { xid } => self.xid(*xid),
            Selector::All(items) | Selector::AnyOf(items) => {
                self.list(items.len())?;
                items
                    .iter()
                    .try_for_each(|item| self.selector(item, depth + 1))
            }
            Selector::Any
            | Selector::Direction(_)
            | Selector::Opcode(_)
            | Selector::Qpn(_)
            | Selector::Psn(_)
            | Selector::Cm(_)
            | Selector::RcRetransmission => Ok(()),
        }
    }

    fn condition(&mut self, condition: &Condition, depth: usize) -> Result<(), RuleError> {
        self.node(depth)?;
        match condition {
            Condition::Forwarded(selector) => self.selector(selector, depth + 1),
            Condition::For { .. } => Ok(()),
            Condition::Release { name } => check_name(name),
            Condition::AnyOf(items) => {
                self.list(items.len())?;
                items
                    .iter()
                    .try_for_each(|item| self.condition(item, depth + 1))
            }
        }
    }
}

fn collect_nth_selector(selector: &Selector, out: &mut HashSet<u32>) {
    match selector {
        Selector::CallOf { xid }
        | Selector::RetransmitOf { xid }
        | Selector::ReplyTo { xid }
        | Selector::AckOfReplyTo { xid }
        | Selector::ReadResponsesFor { xid } => {
            if let Xid::Nth(n) = xid {
                out.insert(*n);
            }
        }
        Selector::All(items) | Selector::AnyOf(items) => {
            items.iter().for_each(|s| collect_nth_selector(s, out))
        }
        Selector::Any
        | Selector::Direction(_)
        | Selector::Opcode(_)
        | Selector::Qpn(_)
        | Selector::Psn(_)
        | Selector::Cm(_)
        | Selector::RcRetransmission => {}
    }
}

fn collect_nth_condition(condition: &Condition, out: &mut HashSet<u32>) {
    match condition {
        Condition::Forwarded(selector) => collect_nth_selector(selector, out),
        Condition::AnyOf(items) => items.iter().for_each(|c| collect_nth_condition(c, out)),
        Condition::For { .. } | Condition::Release { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(name: &str, select: Selector, action: Action) -> Rule {
        Rule {
            name: name.into(),
            select,
            action,
            max_hits: None,
        }
    }

    #[test]
    fn json_round_trip_keeps_the_rules() {
        let set = RuleSet::new(
            "acked.burst".into(),
            vec![
                rule(
                    "lose-ack",
                    Selector::AckOfReplyTo { xid: Xid::Nth(1) },
                    Action::Drop { times: 2 },
                ),
                rule(
                    "hold-reply",
                    Selector::All(vec![
                        Selector::Direction(Direction::FromServer),
                        Selector::ReplyTo { xid: Xid::Is(7) },
                    ]),
                    Action::Hold {
                        until: Condition::AnyOf(vec![
                            Condition::Forwarded(Selector::RetransmitOf { xid: Xid::Is(7) }),
                            Condition::For { micros: 300_000 },
                            Condition::Release { name: "go".into() },
                        ]),
                    },
                ),
            ],
        )
        .unwrap();
        let json = serde_json::to_vec(&set).unwrap();
        assert_eq!(RuleSet::from_json(&json).unwrap(), set);
        assert_eq!(set.nth_values(), HashSet::from([1]));
    }

    #[test]
    fn parses_the_documented_json_shape() {
        let json = br#"{"case":"c","rules":[{"name":"r","select":{"CallOf":{"xid":{"Nth":2}}},
            "action":{"Delay":{"micros":5}}},{"name":"s","select":"Any","action":"Reorder","max_hits":1}]}"#;
        let set = RuleSet::from_json(json).unwrap();
        assert_eq!(set.case(), "c");
        assert_eq!(set.rules()[0].select, Selector::CallOf { xid: Xid::Nth(2) });
        assert_eq!(set.rules()[1].max_hits, Some(1));
    }

    #[test]
    fn refuses_sets_over_the_bounds_with_the_bad_value() {
        let many = (0..=MAX_RULES)
            .map(|i| rule(&format!("r{i}"), Selector::Any, Action::Duplicate))
            .collect();
        assert_eq!(
            RuleSet::new("c".into(), many),
            Err(RuleError::TooManyRules {
                count: MAX_RULES + 1,
                max: MAX_RULES
            })
        );
        let long = "x".repeat(MAX_NAME_LEN + 1);
        assert_eq!(
            RuleSet::new(
                "c".into(),
                vec![rule(&long, Selector::Any, Action::Reorder)]
            ),
            Err(RuleError::NameTooLong {
                len: MAX_NAME_LEN + 1,
                max: MAX_NAME_LEN
            })
        );
        let mut deep = Selector::Any;
        for _ in 0..MAX_DEPTH {
            deep = Selector::All(vec![deep]);
        }
        assert!(matches!(
            RuleSet::new("c".into(), vec![rule("d", deep, Action::Reorder)]),
            Err(RuleError::TooDeep { max: MAX_DEPTH, .. })
        ));
        let wide = Selector::AnyOf(vec![Selector::Any; MAX_LIST_LEN + 1]);
        assert!(matches!(
            RuleSet::new("c".into(), vec![rule("w", wide, Action::Reorder)]),
            Err(RuleError::ListTooLong { len, .. }) if len == MAX_LIST_LEN + 1
        ));
        // Within every per-rule bound, but too many nodes in total.
        let big = Selector::AnyOf(vec![Selector::AnyOf(vec![Selector::Any; 32]); 32]);
        assert_eq!(
            RuleSet::new("c".into(), vec![rule("big", big, Action::Reorder)]),
            Err(RuleError::TooManyNodes { max: MAX_NODES })
        );
        assert!(matches!(
            RuleSet::new(
                "c".into(),
                vec![rule(
                    "z",
                    Selector::ReplyTo { xid: Xid::Nth(0) },
                    Action::Reorder
                )]
            ),
            Err(RuleError::NthZero { .. })
        ));
        assert!(matches!(
            RuleSet::new(
                "c".into(),
                vec![rule("z", Selector::Any, Action::Drop { times: 0 })]
            ),
            Err(RuleError::DropTimesZero { .. })
        ));
        assert!(matches!(
            RuleSet::new(
                "c".into(),
                vec![
                    rule("a", Selector::Any, Action::Reorder),
                    rule("a", Selector::Any, Action::Reorder)
                ]
            ),
            Err(RuleError::DuplicateRuleName { name }) if name == "a"
        ));
        assert!(matches!(
            RuleSet::new(
                "c".into(),
                vec![rule("a\nb", Selector::Any, Action::Reorder)]
            ),
            Err(RuleError::BadName { .. })
        ));
    }

    #[test]
    fn serde_validates_too() {
        let json = br#"{"case":"c","rules":[{"name":"","select":"Any","action":"Reorder"}]}"#;
        let err = RuleSet::from_json(json).unwrap_err();
        assert!(matches!(err, RuleError::Json { ref message } if message.contains("empty")));
        // Deeply nested JSON is refused by serde_json's recursion limit, not by a stack overflow.
        let deep = format!("{}\"Any\"{}", "{\"All\":[".repeat(500), "]}".repeat(500));
        let json = format!(
            r#"{{"case":"c","rules":[{{"name":"d","select":{deep},"action":"Reorder"}}]}}"#
        );
        assert!(RuleSet::from_json(json.as_bytes()).is_err());
    }
}
