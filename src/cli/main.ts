#!/usr/bin/env node
// The `scriptorium` command: dispatches to one module per command group.
import { dashboardCommand } from './dashboard-command.js';
import { debugDumpCommand } from './debug-command.js';
import { devicesCommand } from './devices-command.js';
import { enqueueCommand } from './enqueue-command.js';
import { generateCommand } from './generate-command.js';
import { modelCommands } from './model-command.js';
import { ocrCommand } from './ocr-command.js';
import { reconcileCommand } from './reconcile-command.js';
import { resultsCommand } from './results-command.js';
import { retryCommand } from './retry-command.js';
import { runCommand } from './run-command.js';
import { samplesCommand } from './samples-command.js';
import { serveCommand } from './serve-command.js';
import { statusCommand } from './status-command.js';
import { commandGroup, exitWith, runCommandLine, type CommandGroup } from './usage.js';
import { watchCommand } from './watch-command.js';
import { viewCommand } from './view-command.js';
import { workCommand } from './work-command.js';

const HELP = `scriptorium — batch OCR on native kernels

Commands:
  scriptorium ocr FILE [--model DIR] [--mode M] [--task T] [--pages 1-5] [--format md|json] [--profile]
                                                                      OCR of a PDF or image, no queue
  scriptorium run INPUT... --out DIR [--model DIR] [--task T] [--mode M]
                                                                      the queue pipeline on this machine: OCR of
                                                                      files, folders, archives, s3:// prefixes
  scriptorium enqueue INPUT... [--to URL] [--variant V] [--task T] [--mode M] [--priority N] [--wait]
                                                                      stage documents and queue their pages
  scriptorium work [--model DIR] [--storage URL] [--batch N|auto] [--concurrency N]
                                                                      a worker: reads queued pages until SIGTERM
  scriptorium watch (--redis-list KEY | --webhook-port P | --sqs-queue URL) [--to URL] [--variant V] [--task T]
                                                                      queue objects as they land in a bucket (S3 events)
  scriptorium retry DOCID...|--failed [--storage URL]                 queue the failed pages of documents again
  scriptorium reconcile [--storage URL] [--prefix P] [--dry-run]      after Redis lost its data: queue unfinished documents again
  scriptorium status [--failed N]                                     queue depths, workers, failed jobs
  scriptorium dashboard [--host H] [--port P]                         bull-board and /healthz for the queues
  scriptorium serve [--host H] [--port P] [--to URL] [--variant V]    the HTTP API (submit, status, results) behind API keys
  scriptorium results DOCID [--storage URL] [--format md|json]        a finished document's results
  scriptorium view [--storage URL] [--port P]                         the page viewer on 127.0.0.1: pages, boxes, text
  scriptorium samples --out DIR                                       a few mixed documents to try run on
  scriptorium generate [--model DIR] --prompt TEXT [--max-tokens N]   greedy text generation (streams)
  scriptorium devices [--json]                                        CPU kernel sets and Vulkan GPUs for --device
  scriptorium model download v1|v2|v3 --dir DIR [--revision REV]   the real checkpoint from the Hugging Face hub
  scriptorium model synth --variant v1|v2|v3 --size tiny|wide|full --out DIR [--seed N]
  scriptorium debug dump --model DIR (--prompt TEXT | --image FILE...) [--task T] [--mode M] [--steps N]
                         [--force-ids FILE] [--intermediates] --out FILE.safetensors

Run a command with --help for its options.`;

const SCRIPTORIUM: CommandGroup = {
  label: 'command',
  usage: HELP,
  commands: {
    ocr: ocrCommand,
    run: runCommand,
    enqueue: enqueueCommand,
    work: workCommand,
    watch: watchCommand,
    retry: retryCommand,
    reconcile: reconcileCommand,
    status: statusCommand,
    dashboard: dashboardCommand,
    serve: serveCommand,
    results: resultsCommand,
    view: viewCommand,
    samples: samplesCommand,
    generate: generateCommand,
    devices: devicesCommand,
    model: modelCommands,
    debug: commandGroup('debug command', { dump: debugDumpCommand }),
  },
};

async function main(argv: string[]): Promise<number> {
  if (argv.length > 0) return runCommandLine(SCRIPTORIUM, argv);
  process.stdout.write(`${HELP}\n`);
  return 1;
}

exitWith('scriptorium', main(process.argv.slice(2)));
