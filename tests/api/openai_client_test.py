"""The real arbor-server against the official `openai` Python client.

Starts arbor-server on a free port with the default model (or --model / $ARBOR_MODEL),
then uses the client as a user's script would: models, chat completions streamed and
not, completions with one and several prompts, error classes, a follow-up turn that
reuses the cache, and a clean SIGTERM shutdown. Exits 77 (skipped) when the `openai`
package is missing.
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import threading

SKIP = 77

try:
    import openai
except ImportError:
    print("SKIP: the Python package 'openai' is not installed in", sys.executable)
    sys.exit(SKIP)

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
API_KEY = "test-key-123"
checks = {"passed": 0}


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    checks["passed"] += 1


def default_model():
    if os.environ.get("ARBOR_MODEL"):
        return os.environ["ARBOR_MODEL"]
    data = os.environ.get("XDG_DATA_HOME", "")
    if not data.startswith("/"):
        data = os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data, "arbor", "models", MODEL_FILE)


def start_server(binary, model):
    # The key goes in the environment, not on the command line (where ps shows it).
    proc = subprocess.Popen(
        [binary, "--model", model, "--port", "0", "--threads", "2", "--kv-mib", "256"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, ARBOR_API_KEY=API_KEY))
    first = {}

    def read_first_line():
        # A note on the device ("no GPU used: ...") may come before the serving line.
        for _ in range(4):
            first["line"] = proc.stdout.readline()
            if not first["line"] or first["line"].startswith("arbor-server: serving"):
                return

    reader = threading.Thread(target=read_first_line, daemon=True)
    reader.start()
    reader.join(120)
    match = re.search(r"serving (\S+) on http://[^ ]+:(\d+)", first.get("line", ""))
    if not match:
        proc.kill()
        raise AssertionError("arbor-server did not start: %r %s" % (first.get("line"), proc.stderr.read()))
    return proc, match.group(1), int(match.group(2))


def run(client, model_id):
    models = [m.id for m in client.models.list()]
    check(models == [model_id], "models: %r" % models)

    messages = [{"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Name three colors."}]
    chat = client.chat.completions.create(model=model_id, messages=messages, temperature=0, max_tokens=24)
    choice = chat.choices[0]
    check(chat.object == "chat.completion" and chat.model == model_id, "chat object")
    check(choice.message.role == "assistant" and isinstance(choice.message.content, str)
          and choice.message.content, "chat message: %r" % choice.message)
    check(choice.finish_reason in ("stop", "length"), "finish reason %r" % choice.finish_reason)
    # A reply without reasoning markup has no reasoning_content (an extra field to the client).
    check("reasoning_content" not in (choice.message.model_extra or {}), "no reasoning: %r" % choice.message)
    usage = chat.usage
    check(usage.total_tokens == usage.prompt_tokens + usage.completion_tokens and usage.completion_tokens > 0,
          "usage %r" % usage)
    check(isinstance(usage.prompt_tokens_details.cached_tokens, int), "cached tokens %r" % usage)

    chunks = list(client.chat.completions.create(model=model_id, messages=messages, temperature=0, max_tokens=24,
                                                 stream=True, stream_options={"include_usage": True}))
    check(chunks[0].choices[0].delta.role == "assistant", "first delta has the role")
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    check(text == choice.message.content, "streamed %r != %r" % (text, choice.message.content))
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    check(finishes == [choice.finish_reason], "stream finish reasons %r" % finishes)
    check(chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == usage.completion_tokens,
          "usage chunk %r" % chunks[-1].usage)

    # A follow-up sending the reply back as text is served from the cache.
    follow = messages + [{"role": "assistant", "content": choice.message.content},
                         {"role": "user", "content": "Which one is warmest?"}]
    second = client.chat.completions.create(model=model_id, messages=follow, temperature=0, max_tokens=8)
    previous = usage.prompt_tokens + usage.completion_tokens
    cached = second.usage.prompt_tokens_details.cached_tokens
    check(cached >= previous - 16, "follow-up cached %d of previous %d" % (cached, previous))

    one = client.completions.create(model=model_id, prompt="The capital of France is", temperature=0, max_tokens=8)
    check(one.object == "text_completion" and len(one.choices) == 1 and one.choices[0].text, "completion %r" % one)
    both = client.completions.create(model=model_id, prompt=["The capital of France is", "Water boils at"],
                                     temperature=0, max_tokens=8)
    check([c.index for c in both.choices] == [0, 1], "indices %r" % [c.index for c in both.choices])
    check(both.choices[0].text == one.choices[0].text, "same prompt, same text")
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        model=model_id, prompt="The capital of France is", temperature=0, max_tokens=8, stream=True) if c.choices)
    check(streamed == one.choices[0].text, "streamed completion %r != %r" % (streamed, one.choices[0].text))

    try:
        client.chat.completions.create(model="no-such-model", messages=messages, max_tokens=2)
        check(False, "unknown model accepted")
    except openai.NotFoundError:
        checks["passed"] += 1
    try:
        client.chat.completions.create(model=model_id, messages=messages, max_tokens=2, n=2)
        check(False, "n=2 accepted")
    except openai.BadRequestError as e:
        check(isinstance(e.body, dict) and e.body.get("param") == "n", "error body %r" % e.body)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True, help="path of the arbor-server binary")
    parser.add_argument("--model", default=default_model())
    args = parser.parse_args()
    if not os.path.isfile(args.model):
        print("FAIL: default model not found at %s - run 'bash packaging/setup.sh test'" % args.model)
        return 1

    proc, model_id, port = start_server(args.server, args.model)
    try:
        base = "http://127.0.0.1:%d/v1" % port
        try:
            openai.OpenAI(base_url=base, api_key="wrong", max_retries=0).models.list()
            check(False, "a wrong key was accepted")
        except openai.AuthenticationError:
            checks["passed"] += 1
        run(openai.OpenAI(base_url=base, api_key=API_KEY, max_retries=0, timeout=120), model_id)
    except Exception:
        proc.kill()
        print(proc.stderr.read())
        raise
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("arbor-server did not stop on SIGTERM")
    check(code == 0, "arbor-server exited with %d" % code)
    print("with openai %s" % openai.__version__)
    print("openai_client_test: %d passed, 0 failed" % checks["passed"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
