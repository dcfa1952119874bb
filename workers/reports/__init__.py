"""The PDF engine: HTML in, PDF bytes out, printed by the project's headless Chromium. No Django."""
