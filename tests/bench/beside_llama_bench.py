#!/usr/bin/env python3
"""Runs arbor-bench and llama.cpp's llama-bench on the same synthetic GGUF files, in
alternating rounds (on a busy machine a swing then reaches both alike), and prints one
markdown table: prompt and decode tokens/s of each, per round and as medians, with the
CPU line arbor-bench reports.

    tests/bench/beside_llama_bench.py --llama-bench /path/to/llama-bench \\
        --models qwen3-1.7b:q4_k gemma3-1b:q4_k qwen3moe-1.7b-a0.3b:q4_k

With --int8-activations Arbor also runs with 8-bit activations (its option; llama.cpp's
quantized products always round them so) in every round, as a third column.

Each model is SHAPE:TYPE[:ARCH] as arbor-bench --synthetic takes it; the files are
written by arbor-synth into --dir (kept for later runs). llama-bench is not part of this
repository: build it from llama.cpp's source.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out.stdout


def model_file(args, spec):
    parts = spec.split(":")
    if len(parts) not in (2, 3):
        sys.exit(f"model '{spec}' is not SHAPE:TYPE[:ARCH]")
    path = os.path.join(args.dir, "-".join(parts) + ".gguf")
    if not os.path.exists(path):
        cmd = [args.arbor_synth, "--shape", parts[0], "--type", parts[1], "--out", path]
        if len(parts) == 3:
            cmd += ["--arch", parts[2]]
        print(run(cmd).strip(), file=sys.stderr)
    return path


# Each round's rates: {"pp": .., "tg": ..} and with --depth also "tg@d" (decode after
# that many tokens of context).
def arbor_round(args, path, int8=False):
    cmd = [args.arbor_bench, "--model", path, "--device", "cpu", "--threads", str(args.threads),
           "--prompt-tokens", str(args.prompt), "--gen-tokens", str(args.gen), "--repetitions", "1", "--json"]
    if int8:
        cmd.append("--int8-activations")
    if args.depth:
        cmd += ["--depth", f"0,{args.depth}"]
    report = json.loads(run(cmd))
    rates = {r["test"]: r["tokens_per_second"] for r in report["results"]}
    out = {"pp": rates[f"pp{args.prompt}"]}
    if args.depth:
        out["tg"] = rates[f"tg{args.gen} @ d0"]
        out["tg@d"] = rates[f"tg{args.gen} @ d{args.depth}"]
    else:
        out["tg"] = rates[f"tg{args.gen}"]
    return report["cpu"], out


def llama_round(args, path):
    base = [args.llama_bench, "-m", path, "-t", str(args.threads), "-r", "1", "-o", "json"]
    rows = json.loads(run(base + ["-p", str(args.prompt), "-n", str(args.gen)]))
    out = {"pp": next(r["avg_ts"] for r in rows if r["n_prompt"] == args.prompt and r["n_gen"] == 0),
           "tg": next(r["avg_ts"] for r in rows if r["n_gen"] == args.gen and r["n_prompt"] == 0)}
    if args.depth:
        # Decode alone at depth (a prompt at depth would take long and is not compared).
        rows = json.loads(run(base + ["-p", "0", "-n", str(args.gen), "-d", str(args.depth)]))
        out["tg@d"] = next(r["avg_ts"] for r in rows if r["n_gen"] == args.gen)
    return out


def label(args, test):
    return {"pp": f"pp{args.prompt}", "tg": f"tg{args.gen}", "tg@d": f"tg{args.gen} @ d{args.depth}"}[test]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    build = os.path.join(here, "..", "..", "build", "tests", "bench")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--llama-bench", required=True)
    p.add_argument("--arbor-bench", default=os.path.join(build, "arbor-bench"))
    p.add_argument("--arbor-synth", default=os.path.join(build, "arbor-synth"))
    p.add_argument("--models", nargs="+", required=True)
    p.add_argument("--dir", default=os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                                  "arbor", "synthetic"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--prompt", type=int, default=128)
    p.add_argument("--gen", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--depth", type=int, default=0, help="also decode after this many tokens of context")
    p.add_argument("--int8-activations", action="store_true", help="also run Arbor with 8-bit activations")
    args = p.parse_args()
    os.makedirs(args.dir, exist_ok=True)

    cpu = ""
    lines = []
    for spec in args.models:
        path = model_file(args, spec)
        tests = ["pp", "tg"] + (["tg@d"] if args.depth else [])
        names = ["Arbor"] + (["Arbor int8"] if args.int8_activations else []) + ["llama.cpp"]
        rates = {n: {t: [] for t in tests} for n in names}
        for r in range(args.rounds):
            # Rotate which runs first, so that none always follows another.
            for name in names[r % len(names):] + names[:r % len(names)]:
                if name == "llama.cpp":
                    got = llama_round(args, path)
                else:
                    cpu, got = arbor_round(args, path, int8=name == "Arbor int8")
                for test in tests:
                    rates[name][test].append(got[test])
                # Each round as it ends: a long run that is stopped still leaves figures.
                print(f"{spec} round {r + 1} {name}: " + ", ".join(f"{label(args, t)} {got[t]:.1f}" for t in tests)
                      + " tokens/s", file=sys.stderr, flush=True)
        runs = lambda v: " / ".join(f"{x:.1f}" for x in v)
        llama = rates["llama.cpp"]
        for test in tests:
            b = statistics.median(llama[test])
            cells = []
            for name in names[:-1]:
                a = statistics.median(rates[name][test])
                cells.append(f"{a:.1f} ({runs(rates[name][test])}) | {a / b:.2f}")
            lines.append(f"| {spec} | {label(args, test)} | " + " | ".join(cells) + f" | {b:.1f} ({runs(llama[test])}) |")
            print(lines[-1], file=sys.stderr)
    print(f"cpu: {cpu}; {args.threads} threads, {args.rounds} alternating rounds (median, then each round)\n")
    head = "| model | test | Arbor tokens/s | Arbor / llama.cpp |"
    if args.int8_activations:
        head += " Arbor int8 tokens/s | Arbor int8 / llama.cpp |"
    head += " llama.cpp tokens/s |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
