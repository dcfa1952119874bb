"""The browser probe: real Chromium page loads over HTTP vs HTTPS, cold vs warm (Playwright)."""
