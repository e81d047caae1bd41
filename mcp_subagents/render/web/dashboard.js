"use strict";
// The dashboard: the task list (#/) and one task's page (#/task/ID), kept live by server-sent events.
// Every text that comes from a task is put in with textContent, never as HTML: it was written by a model.
// And it is shown inert (`shown`): control, bidi and invisible characters appear as escapes such as \u202e.
(() => {
  const token = document.querySelector('meta[name="dashboard-token"]').content;
  history.replaceState(null, "", location.pathname + location.hash);  // the secret leaves the address bar
  const view = document.getElementById("view");
  let stream = null;

  {{inert_js}}

  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) {
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, key === "title" ? shown(value) : value);
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(shown(child)));
    }
    return node;
  }

  const usd = (cost) => {
    if (cost === null || cost === undefined) return "–";
    if (cost >= 10) return "$" + cost.toFixed(2);
    if (cost >= 0.01) return "$" + cost.toFixed(4);
    return cost === 0 ? "$0" : "$" + cost.toFixed(6).replace(/0+$/, "");
  };
  const tokens = (count) => (count >= 1000 ? (count / 1000).toFixed(1) + "k" : String(count));
  const seconds = (value) => {
    if (value < 60) return value.toFixed(1) + " s";
    const minutes = Math.floor(value / 60);
    return minutes + " min " + String(Math.floor(value % 60)).padStart(2, "0") + " s";
  };
  const when = (epoch) => new Date(epoch * 1000).toLocaleString();
  const badge = (state) => el("span", { class: "state " + state }, state);
  const live = (on) => document.getElementById("live").classList.toggle("on", on);

  function listen(path, handlers) {
    if (stream) stream.close();
    stream = new EventSource(path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token));
    stream.onopen = () => live(true);
    stream.onerror = () => live(false);
    for (const [name, handler] of Object.entries(handlers)) {
      stream.addEventListener(name, (event) => handler(JSON.parse(event.data)));
    }
  }

  async function post(path, body) {
    const response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Dashboard-Token": token },
      body: JSON.stringify(body || {}),
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(answer.error || response.statusText);
    return answer;
  }

  // ---- the task list ----------------------------------------------------------------------------------------------

  const FILTERS = {
    all: () => true,
    waiting: (t) => t.state === "waiting",
    running: (t) => t.state === "running" || t.state === "queued",
    finished: (t) => !["waiting", "running", "queued"].includes(t.state),
  };
  let filter = "all";
  let listed = [];

  function showList() {
    view.replaceChildren(el("p", { class: "muted" }, "Loading…"));
    listen("/api/events", { tasks: (data) => { listed = data.tasks; renderList(); } });
  }

  function filterBar(tasks) {
    return el("div", { class: "filters", role: "group", "aria-label": "show tasks by state" },
      ...Object.entries(FILTERS).map(([name, keep]) => el("button", {
        class: "filter " + name, "data-filter": name, "aria-pressed": String(name === filter),
        onclick: () => { filter = name; renderList(); },
      }, `${name} (${tasks.filter(keep).length})`)));
  }

  function renderList() {
    const tasks = listed;
    const running = tasks.filter(FILTERS.running).length;
    const waiting = tasks.filter(FILTERS.waiting).length;
    const spent = tasks.reduce((sum, t) => sum + (t.cost_usd || 0), 0);
    document.getElementById("summary").textContent =
      `${tasks.length} task(s), ${running} running, ${waiting} waiting for you, ${usd(spent)} spent`;
    if (!tasks.length) {
      view.replaceChildren(el("p", { class: "empty" }, "No tasks in this state directory yet."));
      return;
    }
    const shownTasks = tasks.filter(FILTERS[filter]);
    if (!shownTasks.length) {
      view.replaceChildren(filterBar(tasks), el("p", { class: "empty" },
        filter === "waiting" ? "No task waits for you." : `No ${filter} tasks.`));
      return;
    }
    const rows = inTreeOrder(shownTasks).map(([t, level]) =>
      el("tr", { class: "task", "data-task-id": t.task_id, onclick: () => (location.hash = "#/task/" + t.task_id) },
        el("td", {}, badge(t.state)),
        el("td", { class: "id", title: t.task_id }, t.task_id.slice(0, 8)),
        indented(el("td", {}, level ? "↳ " + t.agent : t.agent), level),
        el("td", { class: "model" }, t.model || "–"),
        el("td", { class: "desc", title: t.description }, t.description,
          t.waiting && t.state === "waiting" ? el("div", { class: "waiting-for-you", title: t.waiting.headline },
            "waiting for you: " + t.waiting.headline) : null,
          stallOf(t) ? el("div", { class: "stalled-note" }, stallOf(t)) : null),
        el("td", { class: "prompt", title: t.prompt || "" }, t.prompt || ""),
        el("td", { class: "tool" }, t.current_tools.join(", ")),
        el("td", { class: "num" }, String(t.turns)),
        el("td", { class: "num" }, tokens(t.tokens)),
        el("td", { class: "num" }, usd(t.cost_usd)),
        el("td", { class: "num" }, seconds(t.elapsed_s)),
        el("td", { class: "muted" }, when(t.created)),
        el("td", { class: "muted" }, t.owner)));
    view.replaceChildren(filterBar(tasks), el("table", {},
      el("thead", {}, el("tr", {}, ...["state", "id", "agent", "model", "description", "prompt", "running", "turns",
        "tokens", "cost", "elapsed", "started", "owner"].map((name) => el("th", {}, name)))),
      el("tbody", {}, ...rows)));
  }

  // Nested tasks right below the task that launched them when both are shown, in launch order (the list is newest
  // first), each with how deep it is.
  function inTreeOrder(tasks) {
    const shownIds = new Set(tasks.map((t) => t.task_id));
    const below = new Map();
    const nested = (t) => t.parent_task_id && shownIds.has(t.parent_task_id);
    for (const t of tasks.filter(nested)) below.set(t.parent_task_id, [t, ...(below.get(t.parent_task_id) || [])]);
    const ordered = [];
    const visit = (t, level) => {
      ordered.push([t, level]);
      for (const child of below.get(t.task_id) || []) visit(child, level + 1);
    };
    for (const t of tasks) if (!nested(t)) visit(t, 0);
    return ordered;
  }
  function indented(node, level) { node.style.paddingLeft = 6 + level * 16 + "px"; return node; }

  // A running task without progress, as the server saw it, or silent since: the list changes only with the files,
  // so a silence that began after the last change is measured here.
  function stallOf(t) {
    if (t.stall) return t.stall.label + ": " + t.stall.text;
    if (t.state !== "running" || !t.stall_after || !t.active_at) return null;
    const silent = Date.now() / 1000 - t.active_at;
    return silent >= t.stall_after ? `stalled: no model reply or tool result for ${Math.round(silent)} s` : null;
  }
  setInterval(() => { if (!location.hash.startsWith("#/task/") && listed.length) renderList(); }, 10000);

  // ---- one task ---------------------------------------------------------------------------------------------------

  function showTask(taskId) {
    const facts = el("div", { class: "facts" });
    const title = el("h1", {});
    const actions = el("div", { class: "actions" });
    const question = el("section", { class: "question", hidden: "" });
    const chart = el("div", { class: "chart" });
    const transcript = el("div", { class: "transcript" });
    const tree = el("section", { class: "tree", hidden: "" });
    const files = el("section", { class: "files", hidden: "" });
    const points = [];
    view.replaceChildren(el("p", {}, el("a", { href: "#/" }, "← all tasks")), title, facts, question, actions,
      tree, files, chart, el("h2", {}, "Transcript"), transcript);
    listen(`/api/tasks/${encodeURIComponent(taskId)}/events`, {
      task: (data) => {
        if (!data.task) return;
        renderSummary(data.task, title, facts, actions);
        renderQuestion(data.task, question);
        renderTree(data.task, tree);
        renderFiles(data.task, files);
      },
      items: (data) => {
        for (const item of data.items) {
          if (item.kind === "usage") points.push(item);
          else transcript.append(renderItem(item));
        }
        renderChart(chart, points);
      },
    });
  }

  function fact(label, value) { return el("div", { class: "fact" }, el("span", {}, label), el("b", {}, value)); }

  function renderSummary(task, title, facts, actions) {
    document.getElementById("summary").textContent = shown(task.task_id);
    title.replaceChildren(shown(task.agent), badge(task.state), el("span", { class: "muted" }, task.description));
    facts.replaceChildren(
      fact("turns", String(task.turns)),
      fact("tool uses", String(task.tool_uses)),
      fact("running now", task.current_tools.join(", ") || "–"),
      fact("tokens", task.tokens.toLocaleString()),
      fact("cost", usd(task.cost_usd) + (task.budget_usd ? ` of $${task.budget_usd}` : "")),
      fact("elapsed", seconds(task.elapsed_s)),
      fact("model", (task.model || "–") + (task.effort ? ` (effort ${task.effort})` : "")
        + (task.model_note ? ` – ${task.model_note}` : "")),
      fact("owner", task.owner),
      fact("started", when(task.created)),
      fact("denied calls", String(task.denials)),
      ...(stallOf(task) ? [fact("progress", stallOf(task))] : []));
    if (actions.dataset.state === task.state) return;  // redrawn only when the state changes: a click lands
    actions.dataset.state = task.state;
    const message = el("span", { class: "message" });
    if (["running", "queued", "waiting"].includes(task.state)) {
      const stop = el("button", { class: "stop", onclick: async () => {
        stop.disabled = true;
        stop.textContent = "Stopping…";
        try { await post(`/api/tasks/${task.task_id}/stop`); }
        catch (error) { message.textContent = shown(error.message); stop.disabled = false; stop.textContent = "Stop"; }
      } }, "Stop");
      actions.replaceChildren(stop, message);
    } else {
      const prompt = el("textarea", { placeholder: "What the agent should do next", "aria-label": "resume prompt" });
      const resume = el("button", { onclick: async () => {
        if (!prompt.value.trim()) { message.textContent = "Write what the agent should do next."; return; }
        resume.disabled = true;
        try {
          const started = await post(`/api/tasks/${task.task_id}/resume`, { prompt: prompt.value });
          location.hash = "#/task/" + started.task_id;
        } catch (error) { message.textContent = shown(error.message); resume.disabled = false; }
      } }, "Resume");
      actions.replaceChildren(prompt, resume, message);
    }
  }

  // The nested tasks below this one, each with the figures of its own subtree; a click opens one.
  function renderTree(task, box) {
    const nodes = task.tree || [];
    box.hidden = !nodes.length;
    if (!nodes.length) { box.replaceChildren(); return; }
    const nested = task.nested;
    const total = nested ? `${nested.tasks} nested task(s), ${nested.turns} turns (tokens and cost above include ` +
      "theirs)" : `${nodes.length} nested task(s) so far (their cost is above as they spend)`;
    const rows = nodes.map((node) => el("tr", { class: "task", "data-task-id": node.task_id,
      onclick: () => (location.hash = "#/task/" + node.task_id) },
      el("td", {}, badge(node.state), node.stop && node.stop !== node.state && node.stop !== "end_turn" ?
        el("span", { class: "muted" }, " " + node.stop) : null),
      indented(el("td", {}, "↳ " + node.agent), node.level - 1),
      el("td", { class: "desc", title: node.description }, node.description),
      el("td", { class: "muted" }, node.model || "–"),
      el("td", { class: "num" }, String(node.turns)),
      el("td", { class: "num" }, tokens(node.tokens)),
      el("td", { class: "num" }, usd(node.cost_usd))));
    box.replaceChildren(el("h2", {}, "Nested tasks"), el("p", { class: "muted" }, total), el("table", {},
      el("thead", {}, el("tr", {}, ...["state", "agent", "description", "model", "turns", "tokens", "cost"]
        .map((name) => el("th", {}, name)))),
      el("tbody", {}, ...rows)));
  }

  // The permission question the task waits on: what it asks first, the details, then the three answers. Redrawn
  // only when the question changes, so that the person's click is not lost to a refresh.
  function renderQuestion(task, box) {
    const waiting = task.waiting;
    const open = waiting && task.state === "waiting";
    const key = waiting ? `${waiting.id} ${open}` : "";
    if (box.dataset.question === key) return;
    box.dataset.question = key;
    box.hidden = !waiting;
    if (!waiting) { box.replaceChildren(); return; }
    const details = waiting.message.split("\n").slice(2).filter((line) => line !== waiting.always);
    const parts = [
      el("div", { class: "label" }, open ? "waiting for you" : "was waiting for you when the task was interrupted"),
      el("p", { class: "headline" }, waiting.headline),
      el("pre", { class: "details" }, details.join("\n").trim()),
    ];
    if (!open) {
      box.replaceChildren(...parts, el("p", { class: "muted" }, "Resuming the task asks again."));
      return;
    }
    const status = el("p", { class: "answer-status" });
    const buttons = [];
    const answer = (choice) => async () => {
      for (const button of buttons) button.disabled = true;
      status.textContent = "Sending…";
      try {
        const done = await post(`/api/tasks/${task.task_id}/answer`, { question_id: waiting.id, choice });
        status.textContent = shown([done.text, done.note].filter(Boolean).join(" "));
      } catch (error) {
        status.textContent = shown(error.message);
        for (const button of buttons) button.disabled = false;
      }
    };
    const labels = waiting.labels;
    buttons.push(el("button", { class: "allow", onclick: answer("allow") }, labels.allow));
    if (waiting.always && labels.always) buttons.push(el("button", { class: "always", title: waiting.always,
      onclick: answer("always") }, labels.always));
    buttons.push(el("button", { class: "deny", onclick: answer("deny") }, labels.deny));
    box.replaceChildren(...parts, el("div", { class: "choices" }, ...buttons,
      waiting.always ? el("span", { class: "muted always-text" }, waiting.always) : null), status);
  }

  // The files the task changed, once it has ended: one line each (what happened, the path, +added -removed).
  function renderFiles(task, box) {
    const changes = task.files;
    box.hidden = !changes || !changes.count;
    if (box.hidden) { box.replaceChildren(); return; }
    const lines = changes.files.map((file) => el("li", { class: "file " + file.kind + (file.outside ? " outside" : "") },
      file.line));
    const unlisted = changes.count - changes.files.length;
    if (unlisted > 0) lines.push(el("li", { class: "muted" }, `… and ${unlisted} more (tasks show lists them)`));
    box.replaceChildren(el("h2", {}, `Files changed (${changes.count})`),
      changes.root ? el("p", { class: "muted" }, "under " + changes.root) : null,
      el("ul", { class: "file-list" }, ...lines),
      changes.partial ? el("p", { class: "muted" }, "The list may miss changes: " + changes.partial + ".") : null);
  }

  function renderItem(item) {
    switch (item.kind) {
      case "started":
        return el("div", { class: "item notice" }, el("div", { class: "label" }, "started"), when(item.at));
      case "user":
        return el("div", { class: "item user" }, el("div", { class: "label" },
          "prompt" + (item.context_blocks ? ` (with ${item.context_blocks} context block(s))` : "")),
          el("pre", {}, item.text));
      case "assistant":
        return el("div", { class: "item assistant" }, el("div", { class: "label" },
          "assistant" + (item.thinking ? " (thought first)" : "")),
          item.text ? el("pre", {}, item.text) : null,
          ...item.tool_calls.map((call) => el("div", {}, el("span", { class: "tool" }, "→ " + call.name + " "),
            el("pre", {}, JSON.stringify(call.arguments, null, 2)))));
      case "result":
        return el("div", { class: "item result" + (item.is_error ? " error" : "") },
          el("details", { open: "" }, el("summary", {}, (item.is_error ? "tool error" : "tool result") +
            ` (${item.content.length} chars)`), el("pre", {}, item.content)));
      case "denial":
        return el("div", { class: "item denial" }, el("div", { class: "label" }, "denied: " + item.tool),
          el("pre", {}, item.arguments + "\n" + item.reason));
      case "compaction":
        return el("div", { class: "item compaction" }, el("div", { class: "label" },
          `conversation of ${item.replaced} messages summarised (${item.reason})`),
          el("details", {}, el("summary", {}, "summary"), el("pre", {}, item.summary)));
      case "notice":
        return el("div", { class: "item notice" }, el("div", { class: "label" }, "notice"), item.text);
      case "question":
        return el("div", { class: "item question" }, el("div", { class: "label" }, "asked the person"), item.text);
      case "answer":
        return el("div", { class: "item answer " + item.answer }, el("div", { class: "label" }, "answer"), item.text);
      case "end":
        return el("div", { class: "item end " + item.state }, el("div", { class: "label" }, "ended: " + item.state),
          el("pre", {}, item.text));
      default:
        return el("div", { class: "item" }, JSON.stringify(item));
    }
  }

  function renderChart(chart, points) {
    if (!points.length) { chart.replaceChildren(el("span", { class: "muted" }, "No model responses yet.")); return; }
    const width = 1000, height = 120, pad = 6;
    const start = points[0].at, span = Math.max(1, points[points.length - 1].at - start);
    const maxTokens = Math.max(1, ...points.map((p) => p.tokens));
    const maxCost = Math.max(1e-9, ...points.map((p) => p.cost_usd || 0));
    const x = (p) => pad + ((p.at - start) / span) * (width - 2 * pad);
    const line = (value) => points.map((p, i) => `${i ? "L" : "M"}${x(p).toFixed(1)},` +
      `${(height - pad - value(p) * (height - 2 * pad)).toFixed(1)}`).join(" ");
    const svgNs = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(svgNs, "svg");
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("preserveAspectRatio", "none");
    for (const [cls, value] of [["tokens", (p) => p.tokens / maxTokens], ["cost", (p) => (p.cost_usd || 0) / maxCost]]) {
      const path = document.createElementNS(svgNs, "path");
      path.setAttribute("class", cls);
      path.setAttribute("d", points.length > 1 ? line(value) : `M${pad},${height / 2} L${width - pad},${height / 2}`);
      svg.append(path);
    }
    const last = points[points.length - 1];
    chart.replaceChildren(svg, el("div", { class: "legend" },
      el("span", { class: "key-tokens" }, `— tokens: ${last.tokens.toLocaleString()}`),
      el("span", { class: "key-cost" }, `- - cost: ${usd(last.cost_usd)}`),
      el("span", {}, `over ${seconds(span)}, ${points.length} model response(s)`)));
  }

  // ---- routing ----------------------------------------------------------------------------------------------------

  function route() {
    const match = location.hash.match(/^#\/task\/([A-Za-z0-9_-]+)$/);
    if (match) showTask(match[1]);
    else showList();
  }
  window.addEventListener("hashchange", route);
  route();
})();
