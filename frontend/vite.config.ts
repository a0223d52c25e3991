import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// Django serves the built files from frontend/dist under /static/ui/ (STATICFILES_DIRS
// prefix "ui") and index.html itself at "/".
export default defineConfig({
  base: "/static/ui/",
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 2000 },
  server: {
    host: "127.0.0.1",
    proxy: { "/api": "http://127.0.0.1:8000", "/login": "http://127.0.0.1:8000" },
  },
  test: { environment: "node", include: ["src/**/*.test.ts"] },
});
