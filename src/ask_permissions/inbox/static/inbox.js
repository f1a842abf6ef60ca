// The ask-permissions inbox: answers posted without leaving the page, long values unfolded on request, and
// the list kept current by the server's events. Plain JavaScript, no build step, nothing from the network.
"use strict";

(function () {
  const pendingCount = () => document.getElementById("pending-count");

  // -- the token -----------------------------------------------------------------------------------------

  // The printed address carries the token in its fragment, which the browser sends to no server. It is kept
  // in this tab's sessionStorage (this origin, so this port, and this tab only: never a cookie, which the
  // browser would send to every server of the host), taken out of the address bar before anything is
  // fetched, and sent as a header that only this script sets.
  const TOKEN_KEY = "ask-permissions-inbox-token";
  let stopped = false;

  function takeToken() {
    const given = new URLSearchParams(window.location.hash.slice(1)).get("token");
    if (given !== null) {
      history.replaceState(null, "", window.location.pathname + window.location.search);
    }
    try {
      if (given) {
        sessionStorage.setItem(TOKEN_KEY, given);
      }
      return sessionStorage.getItem(TOKEN_KEY) || given;
    } catch (error) {
      return given; // no storage in this tab: the token serves this page only
    }
  }

  const token = takeToken();

  // The printed address pasted into a tab already at this page changes only its fragment, which loads
  // nothing: keep the new token and load the page with it.
  window.addEventListener("hashchange", function () {
    if (new URLSearchParams(window.location.hash.slice(1)).get("token") !== null) {
      takeToken();
      window.location.reload();
    }
  });

  function send(path, options) {
    const init = Object.assign({}, options || {});
    init.headers = Object.assign({ Authorization: "Bearer " + token }, init.headers || {});
    init.credentials = "omit";
    init.cache = "no-store";
    return fetch(path, init);
  }

  // Only a fixed line shows: no token in this tab, or the inbox refused it (it was started again).
  function showOnly(id) {
    stopped = true;
    document.getElementById("inbox").replaceChildren();
    document.getElementById(id).hidden = false;
  }

  function refused() {
    try {
      sessionStorage.removeItem(TOKEN_KEY);
    } catch (error) {
      // nothing kept
    }
    showOnly("token-refused");
  }

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
      const response = await send("/answer", { method: "POST", body: new URLSearchParams(body) });
      if (response.status === 401) {
        refused();
        return;
      }
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
      const response = await send("/action?" + query);
      if (response.status === 401) {
        refused();
        return;
      }
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
        const response = await send("/fragment" + window.location.search);
        if (response.status === 401) {
          refused();
          break;
        }
        if (!response.ok || stopped) {
          break;
        }
        const count = response.headers.get("X-Pending-Count");
        if (count !== null && pendingCount() !== null) {
          pendingCount().textContent = count;
        }
        const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
        if (document.getElementById("view").dataset.view === "history") {
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

  function showLive(on) {
    const live = document.getElementById("live");
    if (live !== null) {
      live.textContent = on ? "live" : "reconnecting…";
      live.classList.toggle("on", on);
    }
  }

  const RECONNECT_MS = 1000;

  // EventSource cannot send a header, so the server's events are read with fetch as a stream: an event
  // ends at a blank line, and only "changed" means anything here (the rest keeps the connection open).
  async function listen() {
    while (!stopped) {
      try {
        const response = await send("/events");
        if (response.status === 401) {
          refused();
          return;
        }
        if (response.ok && response.body !== null) {
          showLive(true);
          refresh(); // whatever changed while not listening
          const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
          let buffer = "";
          for (;;) {
            const { value, done } = await reader.read();
            if (done) {
              break;
            }
            buffer += value.replace(/\r\n?/g, "\n");
            let end = buffer.indexOf("\n\n");
            while (end !== -1) {
              if (buffer.slice(0, end).split("\n").includes("event: changed")) {
                refresh();
              }
              buffer = buffer.slice(end + 2);
              end = buffer.indexOf("\n\n");
            }
          }
        }
      } catch (error) {
        // the stream broke (the inbox stopped, the network went): try again below
      }
      showLive(false);
      await new Promise(function (resolve) { window.setTimeout(resolve, RECONNECT_MS); });
    }
  }

  function say(container, message) {
    const line = document.createElement("p");
    line.className = "alone";
    line.textContent = message;
    container.replaceChildren(line);
  }

  // The page's content comes with the token; what GET / served holds nothing of the store.
  async function load() {
    const inbox = document.getElementById("inbox");
    let response;
    let text;
    try {
      response = await send("/view" + window.location.search);
      text = await response.text();
    } catch (error) {
      say(inbox, "the inbox could not be reached: " + error + "; reload the page to try again");
      return false;
    }
    if (response.status === 401) {
      refused();
      return false;
    }
    // An inert template parses the server's HTML (nothing in it runs, nothing loads) and its nodes move into
    // the page without a copy.
    const holder = document.createElement("template");
    holder.innerHTML = text;
    const view = holder.content.getElementById("view");
    if (!response.ok || view === null) {
      let message = text.slice(0, 300);
      try {
        message = JSON.parse(text).message || message; // the store could not answer now (503): it says why
      } catch (error) {
        // not the inbox's own answer: show what came back
      }
      say(inbox, "the inbox answered " + response.status + ": " + message + "; reload the page to try again");
      return false;
    }
    inbox.replaceChildren(view);
    return true;
  }

  document.addEventListener("DOMContentLoaded", async function () {
    if (!token) {
      showOnly("no-token");
      return;
    }
    if (!(await load())) {
      return;
    }
    for (const card of document.querySelectorAll("article.action")) {
      gate(card);
    }
    document.body.classList.add("ready");
    performance.mark("inbox-ready"); // what benchmarks/inbox.py measures: the page can be answered from here
    listen();
  });
})();
