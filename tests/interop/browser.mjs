// Debian's Chromium for the web pages' checks, through playwright-core: started headless with
// the flags this machine's closed network needs (without the background-networking ones it
// keeps calling Google's hosts, which are refused).

import { chromium } from 'playwright-core';

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export function launchChromium() {
  return chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ARGS });
}
