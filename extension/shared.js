// Values the server and the extension share: the server reads the JSON between the markers below
// (supervisor/constants.py), the extension imports this module. One source: edit here only.
// (A JSON module import would be simpler, but Chrome does not keep it for a service worker it restarts.)
// fileHosts: where a provider tab may load an answer's generated images and files from (Network.loadNetworkResource,
// issue 35): the host itself or a subdomain of it, over https.
// frameHosts: the hosts of the cross-site frames a provider tab may read through a child session of its debugger
// (issue 34: ChatGPT's Deep Research runs in a frame on connector-openai-deep-research.web-sandbox.oaiusercontent.com,
// NX capture deep-research-2026-07.html): the host itself or a subdomain of it, over https.
export default Object.freeze(/*JSON*/{
  "protocolVersion": 1,
  "extensionId": "dehbpnglmiedeaaddfipmnmhmblajpci",
  "discoveryPorts": {
    "first": 8766,
    "last": 8775
  },
  "discoveryPath": "/mcp-discovery",
  "maxFrameBytes": 4194304,
  "closeCodes": {
    "dropped": 4000,
    "badHello": 4400,
    "badToken": 4401,
    "helloTimeout": 4408,
    "replaced": 4409
  },
  "backoffCloseCodes": [
    "badHello",
    "badToken",
    "replaced"
  ],
  "serverPingIntervalMs": 15000,
  "generalCdpMethods": [
    "Runtime.evaluate", "Runtime.callFunctionOn", "Runtime.enable",
    "Page.bringToFront", "Page.navigate", "Page.reload", "Page.captureScreenshot", "Page.getFrameTree",
    "Page.createIsolatedWorld", "Page.getLayoutMetrics", "Page.getNavigationHistory", "Page.navigateToHistoryEntry",
    "Page.handleJavaScriptDialog",
    "Input.insertText", "Input.dispatchKeyEvent", "Input.dispatchMouseEvent",
    "Network.enable", "Network.getResponseBody", "Network.emulateNetworkConditions",
    "Emulation.setDeviceMetricsOverride", "Emulation.clearDeviceMetricsOverride", "Emulation.setUserAgentOverride",
    "Emulation.setEmulatedMedia", "Emulation.setCPUThrottlingRate", "DOM.setFileInputFiles",
    "DOM.getFrameOwner", "DOM.resolveNode"
  ],
  "extensionPingIntervalMs": 20000,
  "providers": {
    "chatgpt": {
      "title": "ChatGPT",
      "origins": [
        "https://chatgpt.com",
        "https://chat.openai.com"
      ],
      "fileHosts": [
        "chatgpt.com",
        "oaiusercontent.com"
      ],
      "frameHosts": [
        "web-sandbox.oaiusercontent.com"
      ]
    },
    "gemini": {
      "title": "Gemini",
      "origins": [
        "https://gemini.google.com"
      ],
      "fileHosts": [
        "gemini.google.com",
        "googleusercontent.com"
      ]
    },
    "claude": {
      "title": "Claude",
      "origins": [
        "https://claude.ai"
      ]
    },
    "grok": {
      "title": "Grok",
      "origins": [
        "https://grok.com"
      ]
    },
    "perplexity": {
      "title": "Perplexity",
      "origins": [
        "https://www.perplexity.ai",
        "https://perplexity.ai"
      ]
    }
  }
}/*END*/);
