#!/usr/bin/env node
// The `scriptorium` command: dispatches to one module per command group.
import { runDashboardCommand } from './dashboard-command.js';
import { runDebugCommand } from './debug-command.js';
import { runDevicesCommand } from './devices-command.js';
import { runEnqueueCommand } from './enqueue-command.js';
import { runGenerateCommand } from './generate-command.js';
import { runModelCommand } from './model-command.js';
import { runOcrCommand } from './ocr-command.js';
import { runResultsCommand } from './results-command.js';
import { runRetryCommand } from './retry-command.js';
import { runRunCommand } from './run-command.js';
import { runSamplesCommand } from './samples-command.js';
import { runServeCommand } from './serve-command.js';
import { runStatusCommand } from './status-command.js';
import { UsageError } from './usage.js';
import { runWatchCommand } from './watch-command.js';
import { runWorkCommand } from './work-command.js';

const HELP = `scriptorium — batch OCR on native kernels

Commands:
  scriptorium ocr FILE [--model DIR] [--mode M] [--task T] [--pages 1-5] [--format md|json] [--profile]
                                                                      OCR of a PDF or image, no queue
  scriptorium run INPUT... --out DIR [--model DIR] [--task T] [--mode M]
                                                                      the queue pipeline on this machine: OCR of
                                                                      files, folders, archives, s3:// prefixes
  scriptorium enqueue INPUT... [--to URL] [--variant V] [--task T] [--mode M] [--priority N] [--wait]
                                                                      stage documents and queue their pages
  scriptorium work [--model DIR] [--storage URL] [--batch N] [--concurrency N]
                                                                      a worker: reads queued pages until SIGTERM
  scriptorium watch (--redis-list KEY | --webhook-port P | --sqs-queue URL) [--to URL] [--variant V] [--task T]
                                                                      queue objects as they land in a bucket (S3 events)
  scriptorium retry DOCID...|--failed [--storage URL]                 queue the failed pages of documents again
  scriptorium status [--failed N]                                     queue depths, workers, failed jobs
  scriptorium dashboard [--host H] [--port P]                         bull-board and /healthz for the queues
  scriptorium serve [--host H] [--port P] [--to URL] [--variant V]    the HTTP API (submit, status, results) behind API keys
  scriptorium results DOCID [--storage URL] [--format md|json]        a finished document's results
  scriptorium samples --out DIR                                       a few mixed documents to try run on
  scriptorium generate [--model DIR] --prompt TEXT [--max-tokens N]   greedy text generation (streams)
  scriptorium devices [--json]                                        CPU kernel sets and Vulkan GPUs for --device
  scriptorium model download v1|v2|v3 --dir DIR [--revision REV]   the real checkpoint from the Hugging Face hub
  scriptorium model synth --variant v1|v2|v3 --size tiny|full --out DIR [--seed N]
  scriptorium debug dump --model DIR (--prompt TEXT | --image FILE...) [--task T] [--mode M] [--steps N]
                         [--force-ids FILE] [--intermediates] --out FILE.safetensors

Run a command with --help for its options.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'samples':
      return runSamplesCommand(rest);
    case 'dashboard':
      return runDashboardCommand(rest);
    case 'serve':
      return runServeCommand(rest);
    case 'ocr':
      return runOcrCommand(rest);
    case 'run':
      return runRunCommand(rest);
    case 'enqueue':
      return runEnqueueCommand(rest);
    case 'work':
      return runWorkCommand(rest);
    case 'watch':
      return runWatchCommand(rest);
    case 'retry':
      return runRetryCommand(rest);
    case 'status':
      return runStatusCommand(rest);
    case 'results':
      return runResultsCommand(rest);
    case 'generate':
      return runGenerateCommand(rest);
    case 'model':
      return runModelCommand(rest);
    case 'debug':
      return runDebugCommand(rest);
    case 'devices':
      return runDevicesCommand(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${HELP}\n`);
      return command === undefined ? 1 : 0;
    default:
      throw new UsageError(`unknown command "${command}"`, HELP);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`scriptorium: ${error.message}\n\n${error.usage}\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`scriptorium: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
