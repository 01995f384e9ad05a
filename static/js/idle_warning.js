// The warning before the idle sign-out (users.security: SENSITIVE_IDLE_TIMEOUT). The page counts from its load
// (the portal's activity stamp may be a few seconds older: data-idle-seconds already allows for that); a minute
// before the end (half the time when it is shorter) the banner shows with "Stay signed in", which POSTs to the
// portal (the session counts as active again) and starts the count anew. When the time is up without it (or
// another script of the page found the session ended: the event "portal:session-ended"), the page removes from
// the DOM, at once, everything it showed of the user and every action: the main content (amounts, accounts,
// names), the menu's links and forms, data kept in JSON script elements, the title. In their place it says the
// user was signed out, with a link to sign in again; "portal:signed-out" tells the page's other scripts to stop.
// Messages go to a polite live region too. No inline script (CSP).
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

  function removeAll(selector) {
    Array.prototype.forEach.call(document.querySelectorAll(selector), function (element) {
      element.remove();
    });
  }

  // Removed, not hidden: nothing of the user is left in the page (a screen reader, a copy, the DOM).
  function removePersonal() {
    var main = document.getElementById("main");
    var card = document.createElement("section");
    var heading = document.createElement("h1");
    card.className = "card signed-out";
    card.id = "signed-out";
    heading.textContent = banner.getAttribute("data-ended-heading") || "";
    heading.tabIndex = -1;
    card.appendChild(heading);
    ended.hidden = false;
    card.appendChild(ended);
    if (main) {
      main.replaceChildren(card);
    } else {
      document.body.prepend(card);
    }
    removeAll(".nav-links > li");
    removeAll('script[type="application/json"]');
    var next = document.querySelector('.language-form input[name="next"]');
    if (next) {
      next.value = window.location.pathname;
    }
    banner.remove();
    document.title = banner.getAttribute("data-ended-title") || document.title;
    heading.focus();
  }

  var over = false;

  function end() {
    if (over) {
      return;
    }
    over = true;
    clear();
    removePersonal();
    say(ended.textContent);
    document.dispatchEvent(new CustomEvent("portal:signed-out"));
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

  document.addEventListener("portal:session-ended", end);
  start(idleSeconds);
})();
