//! A 10,000-operation history: a simulated compare-and-set register used by eight
//! concurrent clients, each operation taking effect at a random instant of its interval.
//! It is linearizable by construction; one stale read appended makes it not. Both
//! verdicts come within a step budget. (To time it: build with `cargo test --release
//! -p tenure-check --test suite --no-run` and run the binary under `time`.)

use tenure_check::linearizability::formats::{to_edn, Format};
use tenure_check::linearizability::history::{Event, EventType, Value};
use tenure_check::linearizability::{check_text, search::Budget, Verdict};

/// A small deterministic generator (Knuth's MMIX LCG): no dependency, same history on
/// every machine.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// `ops` operations by `clients` clients on one register, as Jepsen events in time order.
fn history(ops: usize, clients: u64, seed: u64) -> Vec<Event> {
    let mut rng = Lcg(seed);
    // (invoke time, effect time, complete time, client, f, argument)
    let mut planned = Vec::with_capacity(ops);
    let mut clock = vec![0u64; clients as usize];
    for i in 0..ops {
        let c = (i as u64) % clients;
        let start = clock[c as usize] + 1 + rng.next(5);
        let end = start + 2 + rng.next(40);
        let at = start + 1 + rng.next(end - start - 1);
        clock[c as usize] = end;
        let (f, arg) = match rng.next(3) {
            0 => ("read", Value::Nil),
            1 => ("write", Value::Int(rng.next(5) as i64)),
            _ => (
                "cas",
                Value::List(vec![
                    Value::Int(rng.next(5) as i64),
                    Value::Int(rng.next(5) as i64),
                ]),
            ),
        };
        planned.push((start, at, end, c, f, arg));
    }
    // Apply the operations in effect order: what each returns.
    let mut order: Vec<usize> = (0..ops).collect();
    order.sort_by_key(|&i| (planned[i].1, i));
    let mut state = Value::Nil;
    let mut result = vec![(EventType::Ok, Value::Nil); ops];
    for i in order {
        let (_, _, _, _, f, arg) = &planned[i];
        result[i] = match *f {
            "read" => (EventType::Ok, state.clone()),
            "write" => {
                state = arg.clone();
                (EventType::Ok, arg.clone())
            }
            _ => {
                let Value::List(v) = arg else { unreachable!() };
                if v[0] == state {
                    state = v[1].clone();
                    (EventType::Ok, arg.clone())
                } else {
                    (EventType::Fail, arg.clone())
                }
            }
        };
    }
    // Events in time order; at equal times completions first (they did end first).
    let mut timed = Vec::with_capacity(2 * ops);
    for (i, (start, _, end, c, f, arg)) in planned.iter().enumerate() {
        let ev = |kind, value| Event {
            process: *c,
            kind,
            f: f.to_string(),
            key: None,
            value,
            time: None,
            line: 0,
        };
        timed.push((*start, 1, i, ev(EventType::Invoke, arg.clone())));
        timed.push((*end, 0, i, ev(result[i].0, result[i].1.clone())));
    }
    timed.sort_by_key(|t| (t.0, t.1, t.2));
    timed.into_iter().map(|t| t.3).collect()
}

#[test]
fn a_10000_operation_history_is_decided_both_ways() {
    let events = history(10_000, 8, 23);
    let text = to_edn(&events);
    let budget = Budget {
        max_steps: Some(50_000_000),
        cancel: None,
    };
    let r = check_text(&text, Some(Format::Edn), "cas-register", &budget).unwrap();
    assert_eq!(r.verdict, Verdict::Linearizable, "{}", r.text());
    assert_eq!(r.operations, 10_000);
    eprintln!("10,000 operations, linearizable: {} search steps", r.steps);

    // A read of a value nobody wrote, after everything.
    let mut bad = events;
    for (kind, value) in [
        (EventType::Invoke, Value::Nil),
        (EventType::Ok, Value::Int(99)),
    ] {
        bad.push(Event {
            process: 99,
            kind,
            f: "read".into(),
            key: None,
            value,
            time: None,
            line: 0,
        });
    }
    let r = check_text(&to_edn(&bad), Some(Format::Edn), "cas-register", &budget).unwrap();
    assert_eq!(r.verdict, Verdict::NotLinearizable, "{}", r.text());
    let stuck = r.counterexample.unwrap().stuck.unwrap();
    assert_eq!((stuck.process, stuck.op.as_str()), (99, "read() -> 99"));
    eprintln!(
        "10,000 operations and a stale read, not linearizable: {} search steps",
        r.steps
    );
}
