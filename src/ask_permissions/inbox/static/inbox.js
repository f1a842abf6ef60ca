// The ask-permissions inbox: answers posted without leaving the page, long values unfolded on request, and
// the list kept current by the server's events. Plain JavaScript, no build step, nothing from the network.
"use strict";

(function () {
  const pendingCount = () => document.getElementById("pending-count");

  // -- what a card lets its person do --------------------------------------------------------------------

  function editorOpen(card) {
    const editor = card.querySelector("div.editor");
    return editor !== null && !editor.hidden;
  }

  // Approve stays disabled while a value of the call is folded (and the editor, which shows it all, is
  // closed): nothing is approved that the page never showed.
  function gate(card) {
    const approve = card.querySelector("button.approve");
    if (approve === null || card.classList.contains("answered")) {
      return;
    }
    const folded = card.querySelectorAll(".args .folded").length;
    approve.disabled = folded > 0 && !editorOpen(card);
    const note = card.querySelector(".fold-note");
    if (note !== null) {
      note.hidden = !approve.disabled;
    }
  }

  function unfold(button) {
    const value = button.previousElementSibling;
    if (value !== null && value.classList.contains("folded")) {
      value.textContent = value.dataset.full;
      value.classList.remove("folded");
    }
    const card = button.closest("article.action");
    button.remove();
    if (card !== null) {
      gate(card);
    }
  }

  function toggleEditor(button) {
    const card = button.closest("article.action");
    let editor = card.querySelector("div.editor");
    if (editor === null) {
      const template = card.querySelector("template.editor-template");
      template.after(template.content.cloneNode(true));
      editor = card.querySelector("div.editor");
      editor.hidden = true;
    }
    const area = editor.querySelector("textarea");
    const open = editor.hidden;
    editor.hidden = !open;
    area.disabled = !open; // a closed editor sends nothing: the call is approved as asked
    button.setAttribute("aria-expanded", String(open));
    card.classList.toggle("editing", open);
    if (open) {
      area.focus();
    }
    gate(card);
  }

  function dirty(card) {
    const feedback = card.querySelector("input[name=feedback]");
    return editorOpen(card) || (feedback !== null && feedback.value !== "") || card.contains(document.activeElement);
  }

  function settle(card, message, kind) {
    card.classList.add("answered");
    card.classList.toggle("lost", kind === "lost");
    for (const control of card.querySelectorAll("button, select, input, textarea")) {
      control.disabled = true;
    }
    const notice = card.querySelector(".notice");
    if (notice !== null) {
      notice.textContent = message;
    }
    // The outcome also goes under the card's title, where a glance finds it.
    let outcome = card.querySelector(".outcome");
    if (outcome === null) {
      outcome = document.createElement("p");
      outcome.className = "outcome";
      card.querySelector("header").after(outcome);
    }
    outcome.textContent = message;
  }

  // -- answering -----------------------------------------------------------------------------------------

  async function answer(form, submitter) {
    const card = form.closest("article.action");
    const notice = form.querySelector(".notice");
    const body = new FormData(form, submitter);
    notice.textContent = "sending…";
    let reply;
    try {
      const response = await fetch("/answer", {
        method: "POST",
        body: new URLSearchParams(body),
        headers: { "X-Requested-With": "fetch" },
        credentials: "same-origin",
      });
      const text = await response.text();
      try {
        reply = JSON.parse(text);
      } catch (error) {
        // Not the inbox's own answer (a proxy's page, a crash): say what came back; nothing is confirmed.
        reply = { ok: false, message: "the inbox answered " + response.status + ": " + text.slice(0, 300) };
      }
      reply.status = response.status;
    } catch (error) {
      notice.textContent = "the inbox could not be reached: " + error;
      return;
    }
    if (reply.ok) {
      settle(card, reply.message, "done");
    } else if (reply.status === 409 || reply.status === 404) {
      settle(card, reply.message, "lost"); // someone else answered first: the message says who
    } else {
      notice.textContent = reply.message; // bad input (say, edited arguments that are not JSON): fix it
      card.classList.add("refused");
    }
  }

  document.addEventListener("click", function (event) {
    const target = event.target.closest("button");
    if (target === null) {
      return;
    }
    if (target.classList.contains("unfold")) {
      unfold(target);
    } else if (target.classList.contains("edit")) {
      toggleEditor(target);
    }
  });

  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (!form.classList.contains("answer")) {
      return;
    }
    event.preventDefault();
    answer(form, event.submitter);
  });

  // -- staying current -----------------------------------------------------------------------------------

  async function gone(card) {
    if (card.classList.contains("answered")) {
      // Answered here: the confirmation stays a moment, then the card goes.
      window.setTimeout(function () { card.remove(); }, 4000);
      return;
    }
    if (!dirty(card)) {
      card.remove();
      return;
    }
    // The person was answering this one: say who did instead, and let them read it.
    const key = card.dataset.key;
    const at = key.indexOf("@");
    const query = new URLSearchParams({ id: key.slice(0, at), session: key.slice(at + 1) });
    let message = "answered elsewhere";
    try {
      const response = await fetch("/action?" + query, { credentials: "same-origin" });
      const data = await response.json();
      if (data.status) {
        message = "already " + data.status + (data.decided_by ? " by " + data.decided_by : "") + "; your answer was not given";
      }
    } catch (error) {
      // keep the generic message
    }
    settle(card, message, "lost");
  }

  function merge(fresh) {
    const list = document.getElementById("pending");
    if (list === null) {
      return;
    }
    const incoming = new Map();
    for (const card of fresh.querySelectorAll("article.action")) {
      incoming.set(card.dataset.key, card);
    }
    const present = new Map();
    for (const card of list.querySelectorAll("article.action")) {
      present.set(card.dataset.key, card);
      if (!incoming.has(card.dataset.key)) {
        gone(card);
      }
    }
    let previous = null;
    for (const [key, card] of incoming) {
      let element = present.get(key);
      if (element === undefined) {
        element = document.importNode(card, true);
        if (previous === null) {
          list.prepend(element);
        } else {
          previous.after(element);
        }
        gate(element);
      }
      previous = element;
    }
    const empty = list.querySelector(".empty");
    const cards = list.querySelectorAll("article.action").length;
    if (cards === 0 && empty === null) {
      list.insertAdjacentHTML("beforeend", '<p class="empty">Nothing waits for an answer.</p>');
    } else if (cards > 0 && empty !== null) {
      empty.remove();
    }
  }

  let refreshing = false;
  let again = false;

  async function refresh() {
    if (refreshing) {
      again = true;
      return;
    }
    refreshing = true;
    try {
      do {
        again = false;
        const response = await fetch("/fragment" + window.location.search, { credentials: "same-origin" });
        if (!response.ok) {
          break;
        }
        const count = response.headers.get("X-Pending-Count");
        if (count !== null && pendingCount() !== null) {
          pendingCount().textContent = count;
        }
        const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
        if (document.body.dataset.view === "history") {
          const history = document.getElementById("history");
          const replacement = fresh.getElementById("history");
          if (history !== null && replacement !== null) {
            history.replaceWith(document.importNode(replacement, true));
          }
        } else {
          merge(fresh);
        }
      } while (again);
    } finally {
      refreshing = false;
    }
  }

  function listen() {
    const live = document.getElementById("live");
    const events = new EventSource("/events");
    events.addEventListener("open", function () {
      live.textContent = "live";
      live.classList.add("on");
      refresh(); // whatever changed while not listening
    });
    events.addEventListener("changed", refresh);
    events.addEventListener("error", function () {
      live.textContent = "reconnecting…";
      live.classList.remove("on");
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    for (const card of document.querySelectorAll("article.action")) {
      gate(card);
    }
    document.body.classList.add("ready");
    performance.mark("inbox-ready"); // what benchmarks/inbox.py measures: the page can be answered from here
    listen();
  });
})();
