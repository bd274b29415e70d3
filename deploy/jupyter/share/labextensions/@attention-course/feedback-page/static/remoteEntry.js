/*
 * nbgrader 0.9.6's Assignments tab shows "(view feedback)" beside a hand-in whose feedback was
 * fetched; the link runs `filebrowser:go-to-path` on <assignment>/feedback/<timestamp>, which only
 * shows that folder in the file browser. This plugin opens the feedback pages in it (one per
 * notebook) in JupyterLab's HTML viewer as well, whenever that command goes to such a folder.
 *
 * JupyterLab loads it as a prebuilt extension: this file is the whole of its module-federation
 * container (`init` and `get`), written by hand, since the plugin needs nothing shared but the
 * application object it is activated with.
 */
(function () {
  "use strict";
  var FEEDBACK = /(^|\/)feedback\/\d{4}-\d\d-\d\d [^/]+$/;
  var plugin = {
    id: "@attention-course/feedback-page:plugin",
    description: "Opens the feedback page when nbgrader's (view feedback) link is clicked.",
    autoStart: true,
    activate: function (app) {
      app.commands.commandExecuted.connect(function (_, executed) {
        var path = executed.args && executed.args.path;
        if (executed.id !== "filebrowser:go-to-path" || typeof path !== "string" || !FEEDBACK.test(path)) {
          return;
        }
        app.serviceManager.contents.get(path, { content: true }).then(function (folder) {
          (folder.content || []).forEach(function (item) {
            if (item.type === "file" && /\.html$/.test(item.name)) {
              app.commands.execute("docmanager:open", { path: item.path, factory: "HTML Viewer" });
            }
          });
        }, function (reason) {
          console.warn("feedback-page: cannot list " + path, reason);
        });
      });
    }
  };
  var scope = "@attention-course/feedback-page";
  window._JUPYTERLAB = window._JUPYTERLAB || {};
  window._JUPYTERLAB[scope] = {
    init: function () {
      return Promise.resolve();
    },
    get: function (module) {
      if (module !== "./extension") {
        return Promise.reject(new Error(scope + " has no module " + module));
      }
      return Promise.resolve(function () {
        return { __esModule: true, default: [plugin] };
      });
    }
  };
})();
