//! A second opinion on the linearizability checker: random small histories, each judged
//! by the checker (written as Jepsen EDN, read back, Wing-Gong-Lowe search split by key)
//! and by a brute force written here from the definitions alone, which tries every order.
//! They must agree; a disagreement prints the history (shrunk by proptest).
//!
//! The brute force shares nothing with the checker but the `Event` type: it pairs the
//! events itself and applies Jepsen's meanings itself (`:fail`: did not happen, dropped;
//! `:info` or no completion: may happen at any instant after its invocation, or never;
//! `:ok`: happened between invocation and completion), with its own sequential register
//! (`read` returns the value, `nil` before any write; `write v`; `cas [from to]` only
//! from `from`), one register per key, all keys searched together (no partitioning).

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use std::collections::BTreeMap;
use tenure_check::linearizability::formats::{parse, to_edn, Format};
use tenure_check::linearizability::history::{Event, EventType, Value};
use tenure_check::linearizability::{check_text, search::Budget, Verdict};

/// One operation as the brute force sees it.
#[derive(Debug)]
struct BruteOp {
    f: String,
    key: Option<Value>,
    /// The argument (write, cas) or, for an `ok` read, what it returned.
    value: Value,
    /// `ok`: it must be placed, before its completion (event position).
    ret: Option<usize>,
    call: usize,
}

/// Jepsen's meanings, applied directly to the events.
fn brute_ops(events: &[Event]) -> Vec<BruteOp> {
    let mut ops = Vec::new();
    for (call, e) in events.iter().enumerate() {
        if e.kind != EventType::Invoke {
            continue;
        }
        let completion = events[call + 1..]
            .iter()
            .enumerate()
            .find(|(_, c)| c.process == e.process && c.kind != EventType::Invoke);
        let (kind, ret, value) = match completion {
            Some((k, c)) => (c.kind, Some(call + 1 + k), &c.value),
            None => (EventType::Info, None, &e.value),
        };
        match kind {
            EventType::Fail => {} // it did not happen
            EventType::Ok => ops.push(BruteOp {
                f: e.f.clone(),
                key: e.key.clone(),
                value: if e.f == "read" {
                    value.clone()
                } else {
                    e.value.clone()
                },
                ret,
                call,
            }),
            _ => {
                // Unknown: a read that says nothing, or a write or cas that may happen.
                if e.f != "read" {
                    ops.push(BruteOp {
                        f: e.f.clone(),
                        key: e.key.clone(),
                        value: e.value.clone(),
                        ret: None,
                        call,
                    });
                }
            }
        }
    }
    ops
}

/// The sequential register (one per key): the state after `op`, if it is legal.
fn apply(
    state: &BTreeMap<Option<Value>, Value>,
    op: &BruteOp,
) -> Option<BTreeMap<Option<Value>, Value>> {
    let cur = state.get(&op.key).cloned().unwrap_or(Value::Nil);
    let mut next = state.clone();
    match op.f.as_str() {
        "read" => return (op.value == cur).then_some(next),
        "write" => {
            next.insert(op.key.clone(), op.value.clone());
        }
        "cas" => {
            let Value::List(v) = &op.value else {
                return None;
            };
            if v[0] != cur {
                return None;
            }
            next.insert(op.key.clone(), v[1].clone());
        }
        f => panic!("the generator makes no {f}"),
    }
    Some(next)
}

/// Tries every order: an operation may go next if no other operation still to be placed
/// completed before it was invoked; `ok` operations must all be placed, the others may be
/// left out.
fn brute_linearizable(
    ops: &[BruteOp],
    placed: &mut Vec<bool>,
    state: &BTreeMap<Option<Value>, Value>,
) -> bool {
    if ops
        .iter()
        .zip(placed.iter())
        .all(|(o, p)| *p || o.ret.is_none())
    {
        return true;
    }
    for i in 0..ops.len() {
        if placed[i] {
            continue;
        }
        let blocked = ops
            .iter()
            .zip(placed.iter())
            .any(|(o, p)| !*p && o.ret.is_some_and(|r| r < ops[i].call));
        if blocked {
            continue;
        }
        if let Some(next) = apply(state, &ops[i]) {
            placed[i] = true;
            let ok = brute_linearizable(ops, placed, &next);
            placed[i] = false;
            if ok {
                return true;
            }
        }
    }
    false
}

/// One step of the generator: a process acts.
#[derive(Clone, Debug)]
struct Step {
    process: u8,
    /// Which operation to invoke, or how to complete (ok, fail, info).
    choice: u8,
    a: u8,
    b: u8,
}

/// Values from a small domain, so that reads often agree with writes: `nil`, 0, 1.
fn small(v: u8) -> Value {
    match v % 3 {
        0 => Value::Nil,
        n => Value::Int(i64::from(n) - 1),
    }
}

/// An operation a process has invoked and not completed: (f, key, value).
type Open = (String, Option<Value>, Value);

/// A well-formed Jepsen history from the steps: a process with an operation open
/// completes it (ok, fail or info; a read's ok carries a small value), an idle one
/// invokes; a process whose operation ended `info` is retired and its slot goes on as a
/// new process, as in Jepsen. At most `max_ops` invocations; some stay open.
fn history(steps: &[Step], keys: u8, max_ops: usize) -> Vec<Event> {
    let mut events = Vec::new();
    // slot -> (process, open operation: (f, key, value))
    let mut slots: BTreeMap<u8, (u64, Option<Open>)> = BTreeMap::new();
    let mut invoked = 0;
    for s in steps {
        let slot = slots
            .entry(s.process)
            .or_insert((u64::from(s.process), None));
        let process = slot.0;
        let event = |kind, f: &str, key: &Option<Value>, value| Event {
            process,
            kind,
            f: f.to_string(),
            key: key.clone(),
            value,
            time: None,
            line: 0,
        };
        match slot.1.take() {
            Some((f, key, value)) => {
                let kind = match s.choice % 5 {
                    0..=2 => EventType::Ok,
                    3 => EventType::Fail,
                    _ => EventType::Info,
                };
                let value = if f == "read" {
                    if kind == EventType::Ok {
                        small(s.a)
                    } else {
                        Value::Nil
                    }
                } else {
                    value
                };
                events.push(event(kind, &f, &key, value));
                if kind == EventType::Info {
                    slot.0 += 100; // retired: a new process
                }
            }
            None if invoked < max_ops => {
                let key = (keys > 1).then(|| Value::Int(i64::from(s.b % keys)));
                let (f, value) = match s.choice % 3 {
                    0 => ("read", Value::Nil),
                    1 => ("write", small(s.a)),
                    _ => ("cas", Value::List(vec![small(s.a), small(s.b / 3)])),
                };
                events.push(event(EventType::Invoke, f, &key, value.clone()));
                slot.1 = Some((f.to_string(), key, value));
                invoked += 1;
            }
            None => {}
        }
    }
    events
}

fn steps(len: usize) -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (0u8..4, any::<u8>(), any::<u8>(), any::<u8>()).prop_map(|(process, choice, a, b)| Step {
            process,
            choice,
            a,
            b,
        }),
        1..len,
    )
}

/// Runs `cases` random histories through both checkers; returns how many each verdict
/// got.
fn differential(cases: u32, keys: u8, max_ops: usize, seed: u64) -> (u32, u32) {
    let config = Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let counts = std::cell::Cell::new((0u32, 0u32));
    let result = runner.run(&steps(4 * max_ops), |steps| {
        let events = history(&steps, keys, max_ops);
        let edn = to_edn(&events);
        // The checker, through the reader as a user runs it.
        let report = check_text(&edn, Some(Format::Edn), "cas-register", &Budget::default())
            .map_err(|e| TestCaseError::fail(format!("input error {e} on\n{edn}")))?;
        prop_assert_ne!(report.verdict, Verdict::Unknown);
        // The brute force, on the events as read back (the same as generated).
        let read_back = parse(&edn, Format::Edn).expect("our own EDN reads back");
        let ops = brute_ops(&read_back);
        let brute = brute_linearizable(&ops, &mut vec![false; ops.len()], &BTreeMap::new());
        prop_assert_eq!(
            report.is_linearizable(),
            brute,
            "the checker says {}, the brute force {} on\n{}{}",
            report.verdict.as_str(),
            if brute {
                "linearizable"
            } else {
                "not linearizable"
            },
            edn,
            report.text()
        );
        let (y, n) = counts.get();
        counts.set(if brute { (y + 1, n) } else { (y, n + 1) });
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    counts.get()
}

#[test]
fn the_search_agrees_with_trying_every_order_on_one_register() {
    let (yes, no) = differential(6000, 1, 6, 23);
    // Both verdicts are common, so the agreement is not a vacuous one.
    assert!(yes > 600 && no > 600, "{yes} linearizable, {no} not");
}

#[test]
fn the_search_agrees_with_trying_every_order_on_several_keys() {
    let (yes, no) = differential(4000, 2, 7, 230);
    assert!(yes > 400 && no > 400, "{yes} linearizable, {no} not");
}

#[test]
fn the_brute_force_itself_knows_a_stale_read_and_a_failed_cas() {
    let ev = |process, kind, f: &str, value| Event {
        process,
        kind,
        f: f.into(),
        key: None,
        value,
        time: None,
        line: 0,
    };
    use EventType::{Fail, Invoke, Ok as Done};
    let stale = vec![
        ev(0, Invoke, "write", Value::Int(1)),
        ev(0, Done, "write", Value::Int(1)),
        ev(1, Invoke, "read", Value::Nil),
        ev(1, Done, "read", Value::Nil),
    ];
    let ops = brute_ops(&stale);
    assert!(!brute_linearizable(
        &ops,
        &mut vec![false; ops.len()],
        &BTreeMap::new()
    ));
    let failed_cas = vec![
        ev(0, Invoke, "write", Value::Int(1)),
        ev(0, Done, "write", Value::Int(1)),
        ev(
            1,
            Invoke,
            "cas",
            Value::List(vec![Value::Int(1), Value::Int(2)]),
        ),
        ev(
            1,
            Fail,
            "cas",
            Value::List(vec![Value::Int(1), Value::Int(2)]),
        ),
        ev(1, Invoke, "read", Value::Nil),
        ev(1, Done, "read", Value::Int(1)),
    ];
    let ops = brute_ops(&failed_cas);
    assert!(brute_linearizable(
        &ops,
        &mut vec![false; ops.len()],
        &BTreeMap::new()
    ));
}
