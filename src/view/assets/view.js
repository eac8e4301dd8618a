// track view: the one script of the viewer. No inline script anywhere: the page's
// Content-Security-Policy allows only this file. It never writes text as HTML (textContent
// only), so no stored answer becomes markup here either.
"use strict";

(function () {
  // Live progress: every element [data-live="true"] names a run still going; one event stream
  // brings their progress until they end. A run page reloads when its run ends, to show all.
  function live() {
    const going = Array.from(document.querySelectorAll('[data-run][data-live="true"]'));
    if (going.length === 0 || typeof EventSource === "undefined") return;
    const ids = Array.from(new Set(going.map((e) => e.dataset.run)));
    const source = new EventSource("/events?ids=" + encodeURIComponent(ids.join(",")));
    source.addEventListener("progress", (message) => {
      let runs = [];
      try { runs = JSON.parse(message.data); } catch (_) { return; }
      for (const run of runs) {
        for (const shown of document.querySelectorAll('[data-run="' + run.id + '"]')) {
          const status = shown.querySelector(".status");
          if (status) { status.textContent = run.status; status.className = "status " + run.status; }
          const calls = shown.querySelector(".calls");
          if (calls) calls.textContent = run.calls + " / " + (run.planned > 0 ? run.planned : "?") + " calls";
          shown.dataset.live = String(run.status === "running" || run.status === "waiting");
          shown.dataset.results = String(run.results);
        }
      }
    });
    source.addEventListener("done", () => {
      source.close();
      if (document.body.dataset.reloadWhenDone === "true") window.location.reload();
    });
  }

  // Keyboard: j/k move between the results of a grid, Enter opens one; p/f mark the current
  // result passed or failed, x unmarks it, 1-5 score it, 0 unscores it (ratings, where the
  // database has them). Each key changes that field of the rater's rating only, as `track
  // rate` does.
  function keys() {
    const cells = Array.from(document.querySelectorAll("a.cell"));
    if (cells.length === 0) return;
    let current = -1;
    function select(i) {
      if (current >= 0) cells[current].classList.remove("current");
      current = Math.max(0, Math.min(cells.length - 1, i));
      cells[current].classList.add("current");
      cells[current].focus();
    }
    document.addEventListener("keydown", (event) => {
      const target = event.target;
      if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT")) return;
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      if (event.key === "j") { select(current + 1); event.preventDefault(); }
      else if (event.key === "k") { select(current - 1); event.preventDefault(); }
      else if ((event.key === "p" || event.key === "f" || event.key === "x" || /^[0-5]$/.test(event.key)) && current >= 0) {
        rate(cells[current], event.key);
        event.preventDefault();
      }
    });
    for (const [i, cell] of cells.entries()) cell.addEventListener("focus", () => {
      if (current >= 0) cells[current].classList.remove("current");
      current = i;
      cell.classList.add("current");
    });
  }

  // Posts a rating of the result `cell` names: p (pass), f (fail), x (no verdict), a score 1-5
  // or 0 (no score); the other fields of the rating are kept. The grid's mark is the server's.
  function rate(cell, key) {
    const uid = cell.dataset.uid;
    const run = document.body.dataset.run;
    const token = document.querySelector('meta[name="csrf-token"]');
    if (!uid || !run || !token || document.body.dataset.ratings !== "true") return;
    const form = new URLSearchParams();
    form.set("csrf", token.content);
    form.set("result", uid);
    if (key === "p") form.set("verdict", "pass");
    else if (key === "f") form.set("verdict", "fail");
    else if (key === "x") form.set("clear", "verdict");
    else if (key === "0") form.set("clear", "score");
    else form.set("score", key);
    fetch("/runs/" + encodeURIComponent(run) + "/ratings", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", "X-CSRF-Token": token.content },
      body: form.toString(),
      credentials: "same-origin",
    }).then((response) => {
      if (!response.ok) return;
      const shown = response.headers.get("X-Rating-Mark") || "";
      let mark = cell.querySelector(".rated");
      if (shown === "") { if (mark) mark.remove(); return; }
      if (!mark) { mark = document.createElement("span"); mark.className = "rated"; cell.appendChild(mark); }
      mark.textContent = shown;
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    // Marks that this script ran (the browser test checks it, and that nothing else did).
    document.documentElement.dataset.script = "ran";
    live();
    keys();
  });
})();
