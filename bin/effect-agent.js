#!/usr/bin/env node
// The installed command runs the compiled package (npm start runs the sources directly).
import "../dist/cli/main.js"
