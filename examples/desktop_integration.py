"""Calling tinyagent from a desktop app: in-process, and through the local HTTP server.

    python examples/desktop_integration.py "What is on my calendar tomorrow?"          # both ways, in a terminal
    python examples/desktop_integration.py --url http://127.0.0.1:8765 --token T "…"   # a running `tinyagent serve`
    python examples/desktop_integration.py --gui                                       # a small Tk window

``--model`` takes what the CLI takes (a catalog name, a .gguf, openai:URL, or scripted:FILE.json for a dry run).
"""

from __future__ import annotations

import argparse
import json
import secrets
import threading
from typing import Any

import httpx2
import openai

from tinyagent import Agent
from tinyagent.apps import load_model_spec, load_tools
from tinyagent.apps.server import ServerSettings, ServerThread, create_app


def in_process(agent: Agent, query: str) -> str:
    """The library directly: one call, a typed result."""
    result = agent.run_sync(query)
    for step in result.steps:
        print(f"  [in-process] step {step.id} {step.name} -> {step.status}: {step.result!r}")
    return result.answer


def through_openai_sdk(url: str, token: str, query: str) -> str:
    """Any OpenAI client works: the server plans and executes with its own tools."""
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=token or "none", max_retries=0)
    reply = client.chat.completions.create(model="tinyagent", messages=[{"role": "user", "content": query}])
    return reply.choices[0].message.content or ""


def stream_events(url: str, token: str, query: str, on_event: Any = print) -> None:
    """Server-sent events of the run: steps appear as they are planned and finish."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx2.stream("POST", f"{url}/v1/agent/stream", json={"query": query}, headers=headers, timeout=300) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if line.startswith("data:"):
                on_event(json.loads(line[5:]))


def gui(url: str, token: str) -> None:
    """A minimal window: type a request, watch the steps stream in (tkinter ships with most Pythons)."""
    import tkinter as tk

    root = tk.Tk()
    root.title("tinyagent")
    entry = tk.Entry(root, width=60)
    entry.pack(fill="x", padx=8, pady=8)
    log = tk.Text(root, width=80, height=20)
    log.pack(fill="both", expand=True, padx=8, pady=(0, 8))

    def show(event: dict[str, Any]) -> None:
        kind = event.get("type", "")
        text = event.get("answer") if kind == "answer" else json.dumps(event)[:200]
        root.after(0, lambda: log.insert("end", f"{kind}: {text}\n"))

    def submit(_: Any = None) -> None:
        query = entry.get().strip()
        if query:
            entry.delete(0, "end")
            log.insert("end", f"> {query}\n")
            threading.Thread(target=stream_events, args=(url, token, query, show), daemon=True).start()

    entry.bind("<Return>", submit)
    root.mainloop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("query", nargs="?", default="What is the address of Sid?")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--tools", default="demo", help="demo, builtin, FILE.json or MODULE:ATTR")
    parser.add_argument("--url", help="an already running `tinyagent serve`; default: start one in this process")
    parser.add_argument("--token", default="")
    parser.add_argument("--gui", action="store_true")
    args = parser.parse_args()

    model = load_model_spec(args.model)  # one model, shared: llama.cpp calls are serialised by the model's lock
    if args.url:
        url, server = args.url.rstrip("/"), None
    else:
        # A desktop app can host the server itself, on a free localhost port, for its other processes.
        agent = Agent(tools=load_tools(args.tools), model=model)
        # The app's own token, shared with its clients (the server refuses requests without one).
        args.token = args.token or secrets.token_urlsafe(32)
        server = ServerThread(create_app(agent, ServerSettings(token=args.token))).start()
        url = server.url
    try:
        if args.gui:
            gui(url, args.token)
            return
        local = Agent(tools=load_tools(args.tools), model=model)
        print("in-process answer:", in_process(local, args.query))
        stream_events(url, args.token, args.query,
                      lambda e: print(f"  [sse] {e['type']}: {e.get('name', e.get('answer', ''))}"))
        print("OpenAI SDK answer:", through_openai_sdk(url, args.token, args.query))
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
