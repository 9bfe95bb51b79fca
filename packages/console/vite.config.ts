import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Assets are served by the service at /assets/ (hashed, long-cached); index.html at every page path.
export default defineConfig({
  plugins: [react()],
  base: '/',
  build: { outDir: 'dist', assetsDir: 'assets', sourcemap: false, chunkSizeWarningLimit: 800 },
});
