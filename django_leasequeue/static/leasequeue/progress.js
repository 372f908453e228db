/*
 * django-leasequeue: keeps every {% leasequeue_progress %} bar on the page live.
 *
 * Each bar opens a websocket (snapshot, then live events, then a final state); when the socket
 * drops it reconnects with exponential backoff, and after a few attempts that never delivered a
 * message, or at once when the server says its channel layer is down (close code 4503), it
 * falls back to polling the JSON status view. Everything stops once the job has ended.
 * No dependencies; safe to include once per bar (it binds each bar only once).
 */
(function () {
  "use strict";

  if (window.leasequeueProgress) {
    window.leasequeueProgress.scan();
    return;
  }

  var FIRST_BACKOFF_MS = 500;
  var MAX_BACKOFF_MS = 30000;
  var POLL_INTERVAL_MS = 1000;
  // Websocket attempts in a row that deliver nothing before the bar switches to polling.
  var FAILED_SOCKETS_BEFORE_POLLING = 3;
  // The server's close code when its channel layer cannot be reached: poll at once.
  var CLOSE_UNAVAILABLE = 4503;

  function backoff(attempt) {
    var ceiling = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * Math.pow(2, attempt));
    return ceiling / 2 + (Math.random() * ceiling) / 2; // jitter: many tabs do not retry in step
  }

  function withToken(url, token) {
    return url + (url.indexOf("?") < 0 ? "?" : "&") + "token=" + encodeURIComponent(token);
  }

  function Bar(root) {
    this.root = root;
    this.track = root.querySelector("[role=progressbar]");
    this.fill = root.querySelector(".leasequeue-progress__fill");
    this.percentText = root.querySelector(".leasequeue-progress__percent");
    this.statusText = root.querySelector(".leasequeue-progress__status");
    this.messageText = root.querySelector(".leasequeue-progress__message");
    this.labels = JSON.parse(root.getAttribute("data-status-labels") || "{}");
    this.token = root.getAttribute("data-token");
    this.statusUrl = root.getAttribute("data-status-url");
    this.websocketPath = root.getAttribute("data-websocket-path");
    this.state = { status: root.getAttribute("data-status"), current: null, total: null };
    this.done = root.getAttribute("data-final") === "true";
    this.attempt = 0;
    this.silentSockets = 0;
  }

  Bar.prototype.start = function () {
    if (this.done) return;
    if (this.websocketPath && "WebSocket" in window) this.connect();
    else this.poll();
  };

  Bar.prototype.apply = function (event) {
    var state = this.state;
    ["current", "total", "message"].forEach(function (key) {
      if (key in event) state[key] = event[key];
    });
    if (event.status) state.status = event.status;
    if (event.final || event.kind === "final") this.done = true;
    this.render();
  };

  Bar.prototype.percent = function () {
    var state = this.state;
    if (state.status === "succeeded") return 100;
    if (state.current === null || state.current === undefined || !(state.total > 0)) return null;
    return Math.max(0, Math.min(100, Math.floor((state.current / state.total) * 100)));
  };

  Bar.prototype.render = function () {
    var percent = this.percent();
    this.fill.style.width = (percent === null ? 0 : percent) + "%";
    if (percent === null) this.track.removeAttribute("aria-valuenow");
    else this.track.setAttribute("aria-valuenow", String(percent));
    this.percentText.textContent = percent === null ? "" : percent + "%";
    this.statusText.textContent = this.labels[this.state.status] || this.state.status || "";
    if ("message" in this.state) this.messageText.textContent = this.state.message || "";
    this.root.setAttribute("data-status", this.state.status || "");
    this.root.setAttribute("data-final", this.done ? "true" : "false");
  };

  Bar.prototype.unavailable = function () {
    this.done = true;
    this.messageText.textContent = this.root.getAttribute("data-unavailable-text") || "";
    this.root.setAttribute("data-final", "true");
  };

  Bar.prototype.connect = function () {
    var bar = this;
    var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    var socket = new WebSocket(withToken(scheme + window.location.host + this.websocketPath, this.token));
    var delivered = false;
    socket.onmessage = function (message) {
      delivered = true;
      bar.attempt = 0;
      bar.silentSockets = 0;
      bar.apply(JSON.parse(message.data));
      if (bar.done) socket.close();
    };
    socket.onclose = function (event) {
      if (bar.done) return;
      if (!delivered) bar.silentSockets += 1;
      if (event.code === CLOSE_UNAVAILABLE || bar.silentSockets >= FAILED_SOCKETS_BEFORE_POLLING) {
        bar.poll();
        return;
      }
      window.setTimeout(function () { bar.connect(); }, backoff(bar.attempt++));
    };
  };

  Bar.prototype.poll = function () {
    var bar = this;
    // The token goes in a header: a query string would end up in access logs.
    fetch(this.statusUrl, {
      credentials: "same-origin",
      cache: "no-store",
      headers: { Accept: "application/json", "X-Leasequeue-Token": this.token },
    })
      .then(function (response) {
        if (response.status === 403 || response.status === 404) return null;
        if (!response.ok) throw new Error("status view answered " + response.status);
        return response.json();
      })
      .then(function (state) {
        if (state === null) {
          bar.unavailable();
          return;
        }
        bar.attempt = 0;
        bar.apply(state);
        if (!bar.done) window.setTimeout(function () { bar.poll(); }, POLL_INTERVAL_MS);
      })
      .catch(function () {
        window.setTimeout(function () { bar.poll(); }, backoff(bar.attempt++));
      });
  };

  function scan() {
    var roots = document.querySelectorAll("[data-leasequeue-progress]");
    Array.prototype.forEach.call(roots, function (root) {
      if (root.leasequeueBar) return;
      root.leasequeueBar = new Bar(root);
      root.leasequeueBar.start();
    });
  }

  window.leasequeueProgress = { scan: scan };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", scan);
  else scan();
})();
