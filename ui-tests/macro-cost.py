#!/usr/bin/env python3
"""What adk's macros cost `cargo check`: 200 `#[middleware]` fns and 20 `storage_adapter!` uses,
against the same code written by hand.

Writes two crates into a temporary directory, `macros` and `by_hand`, that depend on adk by
path and share this workspace's target directory (so adk and its dependencies, already built there, are
not rebuilt and only the two crates are timed), with incremental compilation off. Then, alternating, it touches each crate's `src/lib.rs` and runs
`cargo check`, measuring the CPU time (user + sys) cargo and rustc used: on a machine shared
with other builds, CPU time moves far less than wall time. Prints each run and the medians.

    python3 ui-tests/macro-cost.py            # 7 runs of each
    python3 ui-tests/macro-cost.py --runs 11 --keep /tmp/macro-cost
    python3 ui-tests/macro-cost.py --edit --instructions   # re-check after a length-changing edit
    python3 ui-tests/macro-cost.py --edit --callgrind --runs 2  # the same, instructions by callgrind

`--edit` is what an editor does on every keystroke: before each re-check (incremental on) it
adds or removes a statement in the body of the middle middleware fn, so the spans of everything
after it move. `--instructions` also counts the instructions cargo and rustc retire
(`perf stat -e instructions:u`), which a busy machine moves far less than time. Where the
machine has no hardware counters, `--callgrind` runs rustc on the two crates (and only on them:
adk and its dependencies are already built) under `valgrind --tool=callgrind` through a
`RUSTC_WORKSPACE_WRAPPER`, and reports the instructions callgrind counts for that rustc. Those
do not move between runs, so two runs are plenty; with `--keep` the callgrind files stay in
`<dir>/callgrind/` for `callgrind_annotate`. The target directory is `$CARGO_TARGET_DIR` when
set, else this workspace's `target/`.

Record the figure and this command in docs/performance.md.
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKSPACE = os.path.dirname(HERE)
MIDDLEWARE = 200
ADAPTERS = 20

# The 29 callbacks: (name, parameters after ctx, output).
VALUES = ["Memory", "Message", "Thought", "ToolCall", "Tool", "Retrievable", "StandingInstruction"]
FETCHES = [
    ("fetch_memories", "Memory"),
    ("fetch_messages", "Message"),
    ("fetch_thoughts", "Thought"),
    ("fetch_tool_calls", "ToolCall"),
    ("fetch_tools", "Tool"),
    ("fetch_retrievables", "Retrievable"),
    ("refresh_standing_instructions", "StandingInstruction"),
]
CALLBACKS = [(name, [], f"Vec<{value}>") for name, value in FETCHES]
for stem, value, param in [
    ("memory", "Memory", "memory"),
    ("message", "Message", "message"),
    ("thought", "Thought", "thought"),
    ("tool_call", "ToolCall", "tool_call"),
    ("retrievable", "Retrievable", "retrievable"),
    ("standing_instruction", "StandingInstruction", "instruction"),
]:
    CALLBACKS.append((f"store_{stem}", [(param, value)], "()"))
    CALLBACKS.append((f"mutate_{stem}", [(param, value)], "()"))
    deleted = ("instruction", "StandingInstruction") if stem == "standing_instruction" else ("id", "String")
    CALLBACKS.append((f"delete_{stem}", [deleted], "()"))
CALLBACKS.append(("store_media_bytes", [("id", "String"), ("bytes", "ConduitBytes")], "MediaReader"))
CALLBACKS.append(("store_retrievable_bytes", [("id", "String"), ("bytes", "ConduitBytes")], "SpoolReader"))
CALLBACKS.append(("read_media_bytes", [("id", "String")], "Option<MediaReader>"))
CALLBACKS.append(("read_retrievable_bytes", [("id", "String")], "Option<SpoolReader>"))
assert len(CALLBACKS) == 29

PRELUDE = """#![allow(dead_code, unused_imports, unused_variables, clippy::all)]
use std::future::Future;
use std::sync::{Arc, Mutex};

use adk::TurnContext;
use adk::bytes::{ConduitBytes, MediaReader, SpoolReader};
use adk::pipeline::{BoxError, BoxFuture, Middleware, Next, TurnInput};
use adk::primitives::{Memory, Message, Retrievable, StandingInstruction, Thought, Tool, ToolCall};
use adk::storage::{NoopStorage, StorageAdapter, StorageContext, StorageError};

async fn delete_logged(_ctx: &StorageContext, id: String) -> Result<(), StorageError> {
    let _ = id;
    Ok(())
}
"""

MIDDLEWARE_BODY = """    if ctx.is_aborted() {
        return Ok(());
    }
    let _ = next.run(ctx).await;
    Ok(())"""


def with_body_lines(count):
    """The middleware body with `count` extra statements before the run: real middleware does
    work of its own, and what the macro costs per token of body shows only in longer bodies."""
    work = "".join(
        f"    let value_{line} = if ctx.is_aborted() {{ vec![1u32, 2, 3, {line}] }} else {{ Vec::new() }};\n"
        for line in range(count)
    )
    return work + MIDDLEWARE_BODY


def body_of(index, edits):
    """The body of middleware `index`: the middle one has `edits` extra statements (0 or 1), the
    edit `--edit` makes between re-checks."""
    if index != MIDDLEWARE // 2:
        return MIDDLEWARE_BODY
    return "    let edited = ctx.is_aborted();\n" * edits + MIDDLEWARE_BODY


def macro_crate(edits=0):
    parts = [PRELUDE]
    for index in range(MIDDLEWARE):
        parts.append(
            f"#[adk::middleware(pipeline = turn_input)]\n"
            f"pub async fn step_{index}(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {{\n"
            f"{body_of(index, edits)}\n}}\n"
        )
    for index in range(ADAPTERS):
        parts.append(
            f"""adk::storage_adapter! {{
    #[derive(Clone, Default)]
    pub struct Store{index} {{
        messages: Arc<Mutex<Vec<Message>>>,
    }}

    impl {{
        fetch_messages: self.all_messages,
        store_message: |_ctx, message| async move {{
            self.messages.lock().map_err(|_| StorageError::backend("poisoned"))?.push(message);
            Ok(())
        }},
        delete_message: delete_logged,
        ..noop
    }}
}}

impl Store{index} {{
    async fn all_messages(&self, _ctx: &StorageContext) -> Result<Vec<Message>, StorageError> {{
        Ok(self.messages.lock().map_err(|_| StorageError::backend("poisoned"))?.clone())
    }}
}}
"""
        )
    return "\n".join(parts)


def hand_written_crate(edits=0):
    parts = [PRELUDE]
    for index in range(MIDDLEWARE):
        name = f"step_{index}"
        parts.append(
            f"""#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default)]
pub struct {name};

impl {name} {{
    async fn run(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {{
{body_of(index, edits)}
    }}
}}

impl Middleware<TurnInput> for {name} {{
    fn handle<'a>(&'a self, ctx: &'a mut TurnContext, next: Next<'a, TurnContext>) -> BoxFuture<'a, Result<(), BoxError>> {{
        Box::pin(Self::run(ctx, next))
    }}

    fn name(&self) -> &'static str {{
        "{name}"
    }}
}}
"""
        )
    for index in range(ADAPTERS):
        methods = []
        for name, params, output in CALLBACKS:
            signature = "".join(f", {param}: {ty}" for param, ty in params)
            arguments = "".join(f", {param}" for param, _ in params)
            if name == "fetch_messages":
                body = 'Ok(self.messages.lock().map_err(|_| StorageError::backend("poisoned"))?.clone())'
            elif name == "store_message":
                body = 'self.messages.lock().map_err(|_| StorageError::backend("poisoned"))?.push(message);\n        Ok(())'
            elif name == "delete_message":
                body = "delete_logged(ctx, id).await"
            else:
                # What `..noop` writes: the no-op adapter's future, returned as it is. (As an
                # `async fn` awaiting it, each would build a state machine of its own, which
                # `cargo check` pays for: the baseline would then be slower than the equivalent.)
                methods.append(
                    f"    fn {name}(&self, ctx: &StorageContext{signature}) -> "
                    f"impl Future<Output = Result<{output}, StorageError>> + Send {{\n"
                    f"        StorageAdapter::{name}(NoopStorage::shared(), ctx{arguments})\n    }}\n"
                )
                continue
            methods.append(
                f"    async fn {name}(&self, ctx: &StorageContext{signature}) -> Result<{output}, StorageError> {{\n"
                f"        {body}\n    }}\n"
            )
        parts.append(
            f"""#[derive(Clone, Default)]
pub struct Store{index} {{
    messages: Arc<Mutex<Vec<Message>>>,
}}

impl StorageAdapter for Store{index} {{
{"".join(methods)}}}
"""
        )
    return "\n".join(parts)


def write_crate(root, name, source):
    os.makedirs(os.path.join(root, name, "src"), exist_ok=True)
    with open(os.path.join(root, name, "Cargo.toml"), "w") as manifest:
        manifest.write(
            f"""[package]
name = "{name.replace('_', '-')}"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
adk = {{ package = "checked-adk", path = "{WORKSPACE}/adk" }}

[workspace]
"""
        )
    with open(os.path.join(root, name, "src", "lib.rs"), "w") as lib:
        lib.write(source)


# Run by cargo in place of rustc (as RUSTC_WORKSPACE_WRAPPER, so only for the crate checked, never
# for adk or its dependencies): the crate under test is checked under callgrind, whose output file
# the script names in ADK_MACRO_COST_CALLGRIND_OUT; anything else cargo asks rustc runs as it is.
CALLGRIND_WRAPPER = """#!/usr/bin/env python3
import os, sys
rustc, arguments = sys.argv[1], sys.argv[2:]
out = os.environ.get("ADK_MACRO_COST_CALLGRIND_OUT")
crate = arguments[arguments.index("--crate-name") + 1] if "--crate-name" in arguments else None
if out and crate in ("macros", "by_hand"):
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, rustc] + arguments
    os.execvp(command[0], command)
os.execvp(rustc, [rustc] + arguments)
"""


def callgrind_total(path):
    """The instruction count a callgrind output file records for the whole run."""
    with open(path) as report:
        for line in report:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    sys.exit(f"{path} holds no callgrind summary")


def cpu_seconds_of(command, cwd, env, count_instructions=False):
    """CPU seconds (user + sys) and wall seconds of `command`, and the instructions it and its
    children retired in user space when `count_instructions` (else None)."""
    counts = None
    if count_instructions:
        handle, counts = tempfile.mkstemp(prefix="adk-macro-cost-perf-")
        os.close(handle)
        command = ["perf", "stat", "-x", ",", "-e", "instructions:u", "-o", counts, "--"] + command
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"`{' '.join(command)}` failed in {cwd}:\n{result.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    instructions = None
    if counts:
        with open(counts) as report:
            for line in report:
                fields = line.strip().split(",")
                if len(fields) > 2 and fields[2].startswith("instructions"):
                    if not fields[0].isdigit():
                        sys.exit(f"perf could not count instructions ({line.strip()}): run without --instructions")
                    instructions = int(fields[0])
        os.remove(counts)
        if instructions is None:
            sys.exit("perf stat printed no instruction count: run without --instructions")
    return cpu, wall, instructions


def main():
    global MIDDLEWARE, ADAPTERS, MIDDLEWARE_BODY
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", help="write the crates here and keep them")
    parser.add_argument("--middleware", type=int, default=MIDDLEWARE, help="how many #[middleware] fns")
    parser.add_argument("--adapters", type=int, default=ADAPTERS, help="how many storage_adapter! uses")
    parser.add_argument(
        "--body-lines",
        type=int,
        default=0,
        help="statements of work each middleware body does before running next (default: none)",
    )
    parser.add_argument(
        "--incremental",
        action="store_true",
        help="keep incremental compilation on: the edit-and-recheck loop, where unchanged items reuse "
        "the last run's checking but every macro is expanded again",
    )
    parser.add_argument(
        "--edit",
        action="store_true",
        help="before each re-check, add or remove a statement in the middle middleware's body, as "
        "typing does (implies --incremental)",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count instructions retired (perf stat -e instructions:u); fails loudly without perf",
    )
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="count the instructions of rustc on each crate under valgrind's callgrind (no hardware "
        "counters needed); CPU times are then callgrind's, not rustc's",
    )
    arguments = parser.parse_args()
    if arguments.callgrind and arguments.instructions:
        sys.exit("--callgrind and --instructions count the same thing two ways: pick one")
    if arguments.callgrind and shutil.which("valgrind") is None:
        sys.exit("--callgrind needs `valgrind` on PATH, and it is not there")
    if arguments.edit:
        arguments.incremental = True
    if arguments.instructions and shutil.which("perf") is None:
        sys.exit("--instructions needs `perf` on PATH, and it is not there")
    MIDDLEWARE, ADAPTERS = arguments.middleware, arguments.adapters
    MIDDLEWARE_BODY = with_body_lines(arguments.body_lines)

    root = arguments.keep or tempfile.mkdtemp(prefix="adk-macro-cost-")
    write_crate(root, "macros", macro_crate())
    write_crate(root, "by_hand", hand_written_crate())
    # Incremental compilation off by default: a touched but unchanged file would otherwise reuse
    # the last run's type checking, and the runs would time the whole check less the cache. With
    # --incremental that is what is timed: a user's re-check after an edit elsewhere.
    incremental = "1" if arguments.incremental else "0"
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(WORKSPACE, "target")
    env = dict(os.environ, CARGO_TARGET_DIR=target, CARGO_INCREMENTAL=incremental)
    grinds = os.path.join(root, "callgrind")
    if arguments.callgrind:
        os.makedirs(grinds, exist_ok=True)
        wrapper = os.path.join(root, "rustc-under-callgrind")
        with open(wrapper, "w") as script:
            script.write(CALLGRIND_WRAPPER)
        os.chmod(wrapper, 0o755)
        env["RUSTC_WORKSPACE_WRAPPER"] = wrapper
    check = ["cargo", "check", "--offline", "--quiet"]
    # Warm-up: builds adk once into the shared target directory and proves both crates compile.
    for crate in ("macros", "by_hand"):
        cpu_seconds_of(check, os.path.join(root, crate), env)

    sources = {"macros": macro_crate, "by_hand": hand_written_crate}
    samples = {"macros": [], "by_hand": []}
    counted = {"macros": [], "by_hand": []}
    for run in range(arguments.runs):
        for crate in ("macros", "by_hand") if run % 2 == 0 else ("by_hand", "macros"):
            lib = os.path.join(root, crate, "src", "lib.rs")
            if arguments.edit:
                # Run 1 adds the statement, run 2 removes it, and so on: every re-check follows
                # an edit that changes the body's length.
                with open(lib, "w") as source:
                    source.write(sources[crate]((run + 1) % 2))
            else:
                os.utime(lib)
            run_env = env
            if arguments.callgrind:
                grind = os.path.join(grinds, f"{crate}.{run + 1}.out")
                run_env = dict(env, ADK_MACRO_COST_CALLGRIND_OUT=grind)
            cpu, wall, instructions = cpu_seconds_of(
                check, os.path.join(root, crate), run_env, arguments.instructions
            )
            if arguments.callgrind:
                if not os.path.exists(grind):
                    sys.exit(f"cargo did not run rustc on {crate} under callgrind (nothing at {grind})")
                instructions = callgrind_total(grind)
            samples[crate].append(cpu)
            line = f"run {run + 1} {crate:8} cpu {cpu:6.2f} s  wall {wall:6.2f} s"
            if instructions is not None:
                counted[crate].append(instructions)
                line += f"  instructions {instructions / 1e9:6.2f} G"
            print(line, flush=True)

    what = f"({MIDDLEWARE} #[middleware], {ADAPTERS} storage_adapter!"
    what += ", re-check after a length-changing edit)" if arguments.edit else ")"
    for name, pick in (("median", statistics.median), ("min", min)):
        macros = pick(samples["macros"])
        by_hand = pick(samples["by_hand"])
        print(
            f"{name} cpu (user+sys): macros {macros:.2f} s, by hand {by_hand:.2f} s, "
            f"ratio {macros / by_hand:.2f}x {what}"
        )
    if arguments.instructions or arguments.callgrind:
        macros = statistics.median(counted["macros"])
        by_hand = statistics.median(counted["by_hand"])
        source = "callgrind, rustc on the crate" if arguments.callgrind else "perf, cargo and rustc"
        print(
            f"median instructions ({source}): macros {macros / 1e9:.3f} G, by hand {by_hand / 1e9:.3f} G, "
            f"ratio {macros / by_hand:.2f}x {what}"
        )
    if not arguments.keep:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
