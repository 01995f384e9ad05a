// The payment page's live status: while the bank processes the payment, read the portal's JSON status
// (data-status-url) and redraw the status, the timeline and the actions without reloading the page. The portal
// reads the bank in the background (payments.polling); this script only reads the portal, slower over time,
// and stops at a final status. No inline script or style (CSP): everything is built with DOM calls.
(function () {
  "use strict";

  var root = document.getElementById("payment");
  if (!root || root.getAttribute("data-live") !== "true") {
    return;
  }
  var url = root.getAttribute("data-status-url");
  var delay = 2000; // first read after 2 s, then slower, at most every 30 s
  var MAX_DELAY = 30000;
  var lastSignature = "";
  var stopped = false;

  function byId(id) {
    return document.getElementById(id);
  }

  function setText(id, text) {
    var element = byId(id);
    if (element) {
      element.textContent = text || "";
    }
  }

  function show(id, visible) {
    var element = byId(id);
    if (element) {
      element.hidden = !visible;
    }
  }

  function entryElement(entry) {
    var item = document.createElement("li");
    item.className = "timeline-entry";
    var time = document.createElement("time");
    time.setAttribute("datetime", entry.at);
    time.textContent = entry.atDisplay;
    item.appendChild(time);
    item.appendChild(document.createTextNode(" "));
    var title = document.createElement("strong");
    title.textContent = entry.statusLabel || entry.kindLabel;
    item.appendChild(title);
    // The bank's status code is not shown beside the words: the current one is under "Details".
    if (entry.actor) {
      item.appendChild(document.createTextNode(" " + entry.actor));
    }
    [[entry.meaning, ""], [entry.detail, "help"]].forEach(function (pair) {
      if (pair[0]) {
        var paragraph = document.createElement("p");
        paragraph.className = pair[1];
        paragraph.textContent = pair[0];
        item.appendChild(paragraph);
      }
    });
    return item;
  }

  function redraw(data) {
    var label = byId("payment-status-label");
    if (label) {
      label.textContent = data.statusLabel;
      label.className = "badge badge-" + data.statusTone;
      label.setAttribute("data-status", data.transactionStatus);
    }
    setText("payment-state-label", data.stateLabel);
    show("payment-state-label", !!data.stateLabel);
    setText("payment-status-code", data.transactionStatus);
    setText("payment-status-meaning", data.statusMeaning);
    show("payment-insufficient-funds", data.insufficientFunds);
    setText("payment-psu-message", data.psuMessage);
    show("payment-psu-message", !!data.psuMessage);
    if (data.fee) {
      setText("payment-fee", data.fee);
    }
    show("payment-cancel-link", data.canCancel);
    show("payment-patc", data.transactionStatus === "PATC");
    show("payment-sign-form", data.maySign); // this viewer's turn to sign came (or went) while the page was open
    show("payment-share", !data.maySign);
    var list = byId("payment-timeline");
    if (list) {
      while (list.firstChild) {
        list.removeChild(list.firstChild);
      }
      data.timeline.forEach(function (entry) {
        list.appendChild(entryElement(entry));
      });
    }
    var signatures = byId("payment-signature-list");
    if (signatures && data.signatures.length) {
      while (signatures.firstChild) {
        signatures.removeChild(signatures.firstChild);
      }
      data.signatures.forEach(function (signature) {
        var item = document.createElement("li");
        item.textContent = signature.text;
        signatures.appendChild(item);
      });
    }
    if (!data.live) {
      show("payment-live-note", false);
      show("payment-check-form", false);
    }
  }

  function schedule() {
    if (stopped) {
      return;
    }
    window.setTimeout(read, delay);
    delay = Math.min(Math.round(delay * 1.5), MAX_DELAY);
  }

  function read() {
    if (stopped) {
      return; // signed out while this read waited
    }
    if (document.hidden) {
      schedule(); // a hidden tab does not read; it catches up when shown
      return;
    }
    window
      .fetch(url, {
        credentials: "same-origin",
        // not the user's activity: an unattended page must not keep the session alive (idle sign-out)
        headers: { Accept: "application/json", "X-Background-Refresh": "1" },
      })
      .then(function (response) {
        var type = response.headers.get("Content-Type") || "";
        if (response.redirected || type.indexOf("application/json") !== 0) {
          stopped = true; // signed out (idle timeout): stop, and say how to go on
          show("payment-live-note", false);
          show("payment-live-stopped", true);
          // the page's idle sign-out (idle_warning.js) removes the payment from the page
          document.dispatchEvent(new CustomEvent("portal:session-ended"));
          return null;
        }
        if (!response.ok) {
          throw new Error("status " + response.status);
        }
        return response.json();
      })
      .then(function (data) {
        if (data === null || stopped) {
          return; // signed out meanwhile: the page shows nothing of the payment any more
        }
        var signature = [data.transactionStatus, data.state, data.timeline.length, data.fundsAvailable, data.maySign,
          data.signatures.map(function (s) { return s.text; }).join(";")].join("|");
        if (signature !== lastSignature) {
          lastSignature = signature;
          redraw(data);
          delay = 2000; // something moved: look again soon
        }
        if (data.live) {
          schedule();
        }
      })
      .catch(function () {
        schedule(); // signed out or offline: keep trying, slowly
      });
  }

  document.addEventListener("portal:signed-out", function () {
    stopped = true; // the page no longer shows the payment: read nothing more
  });
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) {
      delay = 2000;
    }
  });
  schedule();
})();
