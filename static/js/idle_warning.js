// The warning before the idle sign-out (users.security: SENSITIVE_IDLE_TIMEOUT). The page counts from its load
// (the portal's activity stamp may be a few seconds older: data-idle-seconds already allows for that); a minute
// before the end (half the time when it is shorter) the banner shows with "Stay signed in", which POSTs to the
// portal (the session counts as active again) and starts the count anew. When the time is up without it, the
// banner says so and links to the sign-in page. Messages go to a polite live region too. No inline script (CSP).
(function () {
  "use strict";

  var banner = document.getElementById("idle-warning");
  var form = document.getElementById("idle-warning-form");
  var status = document.getElementById("idle-warning-status");
  if (!banner || !form || !status || !window.fetch) {
    return;
  }
  var warning = document.getElementById("idle-warning-text");
  var ended = document.getElementById("idle-warning-ended");
  var button = form.querySelector("button");
  var idleSeconds = parseInt(banner.getAttribute("data-idle-seconds"), 10);
  if (!(idleSeconds > 0)) {
    return;
  }
  var timers = [];

  function say(text) {
    status.textContent = "";
    window.setTimeout(function () {
      status.textContent = text;
    }, 50);
  }

  function clear() {
    timers.forEach(function (timer) {
      window.clearTimeout(timer);
    });
    timers = [];
  }

  function warn() {
    warning.hidden = false;
    ended.hidden = true;
    form.hidden = false;
    banner.hidden = false;
    say(warning.textContent);
    button.focus();
  }

  function end() {
    clear();
    warning.hidden = true;
    form.hidden = true;
    ended.hidden = false;
    banner.hidden = false;
    say(ended.textContent);
  }

  function start(seconds) {
    clear();
    var lead = Math.min(60, Math.floor(seconds / 2));
    timers.push(window.setTimeout(warn, (seconds - lead) * 1000));
    timers.push(window.setTimeout(end, seconds * 1000));
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    button.disabled = true;
    fetch(form.action, {
      method: "POST",
      body: new FormData(form),
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    })
      .then(function (response) {
        if (response.status === 401) {
          end();
          return null;
        }
        if (!response.ok) {
          throw new Error("HTTP " + response.status);
        }
        return response.json();
      })
      .then(function (answer) {
        if (!answer) {
          return;
        }
        banner.hidden = true;
        say(form.getAttribute("data-kept") || button.textContent);
        start(answer.idleSeconds || idleSeconds);
      })
      .catch(function () {
        form.submit(); // the plain form: the portal answers with the page again
      })
      .finally(function () {
        button.disabled = false;
      });
  });

  start(idleSeconds);
})();
