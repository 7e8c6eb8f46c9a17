#!/usr/bin/env python3
"""Renders every template in conversations.json with Python's jinja2, configured the way
Hugging Face transformers renders chat templates (trim_blocks, lstrip_blocks, loop
controls, its json.dumps-based tojson, raise_exception and strftime_now globals), and
writes expected.json: for each template and conversation either {"output": text} or
{"error": message} when the template raises. strftime_now is pinned to 2026-11-27 so the
expected text does not depend on the day it was made; the C++ test pins it the same way.

Usage: python3 make_expected.py   (needs jinja2; run from any directory)
"""
import datetime
import json
import pathlib

from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = pathlib.Path(__file__).resolve().parent
PINNED_NOW = datetime.datetime(2026, 11, 27, 12, 0, 0)


class TemplateRaised(Exception):
    pass


def raise_exception(message):
    raise TemplateRaised(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: PINNED_NOW.strftime(fmt)
    return env


def main():
    cases = json.loads((HERE / "conversations.json").read_text(encoding="utf-8"))
    env = environment()
    expected = {}
    for name, tokens in cases["templates"].items():
        template = env.from_string((HERE / name).read_text(encoding="utf-8"))
        renders = {}
        for conversation, case in cases["conversations"].items():
            try:
                # `tools` only where the conversation has them: undefined otherwise, as for a
                # caller without tools.
                tools = {"tools": case["tools"]} if "tools" in case else {}
                renders[conversation] = {"output": template.render(
                    messages=case["messages"], add_generation_prompt=case["add_generation_prompt"], **tokens, **tools)}
            except TemplateRaised as e:
                renders[conversation] = {"error": str(e)}
        expected[name] = renders
    (HERE / "expected.json").write_text(json.dumps(expected, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
