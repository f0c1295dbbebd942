// Relay's web board: follow the host's board events and refetch what they touch.
// The stream carries no HTML: an event names a project, a task or a session, and every
// fragment on the page says what it shows (data-watch) and where it comes from (data-src);
// htmx refetches those, so replaying an event twice changes nothing.
(function () {
  "use strict";
  var csrf = document.querySelector('meta[name="csrf-token"]');
  var live = document.getElementById("live");
  var source = null;
  var lastId = null;
  var retry = null;
  var pending = new Set();
  var flushing = null;

  // htmx sends the CSRF token as a header too (forms also carry it as a field)
  document.body.addEventListener("htmx:configRequest", function (e) {
    if (csrf) { e.detail.headers["X-CSRF-Token"] = csrf.content; }
  });
  // a comment form empties itself once its comment is in
  document.body.addEventListener("htmx:afterRequest", function (e) {
    var form = e.detail.elt;
    if (e.detail.successful && form && form.classList && form.classList.contains("reset-on-success")) {
      form.reset();
    }
  });

  function show(state, text) {
    if (!live) { return; }
    live.dataset.state = state;
    live.textContent = text;
  }

  function watched(data) {
    var ev = data && data.event;
    if (!ev) { return []; }
    if (ev.kind === "board_changed") {
      var keys = ["all", "project:" + ev.project];
      if (ev.task) { keys.push("task:" + ev.task); }
      // a link made or ended moves a session in or out of "sessions without a task"
      if (ev.entity === "link" || (ev.fields && ev.fields.session)) { keys.push("hooked"); }
      return keys;
    }
    if (ev.kind === "live_state") {
      var sessions = ["hooked", "session:" + ev.agent_session_id];
      if (ev.relay_session_id) { sessions.push("session:" + ev.relay_session_id); }
      return sessions;
    }
    return [];
  }

  function flush() {
    flushing = null;
    var keys = pending;
    pending = new Set();
    var seen = new Set();
    document.querySelectorAll("[data-watch][data-src]").forEach(function (el) {
      var mine = el.dataset.watch.split(/\s+/);
      if (!mine.some(function (k) { return keys.has(k); })) { return; }
      // a card inside a column list that is refetched anyway needs no fetch of its own
      var outer = el.parentElement && el.parentElement.closest("[data-watch][data-src]");
      if (outer && seen.has(outer)) { return; }
      seen.add(el);
      if (!el.id) { return; }
      htmx.ajax("GET", el.dataset.src, { target: "#" + el.id, swap: "outerHTML" });
    });
  }

  function onEvent(msg) {
    lastId = msg.lastEventId || lastId;
    var data;
    try { data = JSON.parse(msg.data); } catch (err) { return; }
    watched(data).forEach(function (k) { pending.add(k); });
    if (pending.size && !flushing) { flushing = setTimeout(flush, 100); }
  }

  function connect() {
    var start = document.body.dataset.events;
    if (!start) { return; }
    if (source) { source.close(); }
    clearTimeout(retry);
    var url = start;
    if (lastId) { url = start.split("?")[0] + "?after=" + encodeURIComponent(lastId); }
    source = new EventSource(url);
    source.addEventListener("open", function () { show("on", "live"); });
    source.addEventListener("event", onEvent);
    // the host dropped us (too far behind) or is closing: resume from the last id we had
    source.addEventListener("resync", function () {
      source.close();
      show("off", "reconnecting…");
      retry = setTimeout(connect, 1000);
    });
    source.addEventListener("error", function () {
      show("off", "reconnecting…");
      if (source.readyState === EventSource.CLOSED) { retry = setTimeout(connect, 3000); }
    });
  }

  // phones kill a background page's EventSource: come back at once when the page does
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible" &&
        (!source || source.readyState !== EventSource.OPEN)) { connect(); }
  });
  window.addEventListener("online", connect);
  connect();
})();
