import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  isGrpcServiceError,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { ValidationError } from '../model';
import { FAILURE_TYPES } from '../model/failure-types';

// Typed errors of the client library. The API maps each kind to one HTTP status, the CLI to one exit code.

export type KeelsonErrorKind = 'not_found' | 'conflict' | 'invalid' | 'unavailable';

export abstract class KeelsonError extends Error {
  abstract readonly kind: KeelsonErrorKind;
}

/** No such rollout, node, or rollout on that node, or no such package in that rollout. */
export class NotFoundError extends KeelsonError {
  override name = 'NotFoundError';
  readonly kind = 'not_found';
}

/** A rollout of that name runs with a different spec: update it instead (applyRollout, PUT). */
export class ConflictError extends KeelsonError {
  override name = 'ConflictError';
  readonly kind = 'conflict';
  constructor(
    message: string,
    readonly workflowId: string,
  ) {
    super(message);
  }
}

/** The request itself is wrong: the errors name the field paths. */
export class InvalidError extends KeelsonError {
  override name = 'InvalidError';
  readonly kind = 'invalid';
  constructor(readonly errors: ValidationError[]) {
    super(errors.map((e) => `${e.path}: ${e.message}`).join('; '));
  }
}

/** Temporal could not be reached or did not answer in time. */
export class UnavailableError extends KeelsonError {
  override name = 'UnavailableError';
  readonly kind = 'unavailable';
}

// gRPC status codes that mean "the service is not there or not answering".
const UNAVAILABLE_CODES = new Set([4 /* DEADLINE_EXCEEDED */, 14 /* UNAVAILABLE */]);

/** Turns an error from @temporalio/client into a KeelsonError when it is one of the known kinds. */
export function translate(err: unknown, what: string): unknown {
  if (err instanceof KeelsonError) return err;
  if (err instanceof WorkflowNotFoundError) return new NotFoundError(`${what} not found`);
  if (err instanceof WorkflowExecutionAlreadyStartedError) {
    return new ConflictError(`${what} already exists`, err.workflowId);
  }
  if (err instanceof WorkflowUpdateFailedError) {
    const cause = err.cause;
    if (cause instanceof ApplicationFailure && cause.type === FAILURE_TYPES.notFound)
      return new NotFoundError(cause.message);
    if (cause instanceof ApplicationFailure && cause.type === FAILURE_TYPES.invalidSpec) {
      return new InvalidError([{ path: 'spec', message: cause.message }]);
    }
    if (cause instanceof ApplicationFailure) return new InvalidError([{ path: what, message: cause.message }]);
  }
  if (isGrpcServiceError(err)) {
    if (err.code === 5 /* NOT_FOUND */) return new NotFoundError(`${what} not found`);
    if (UNAVAILABLE_CODES.has(err.code)) return new UnavailableError(`Temporal is unavailable: ${err.details}`);
  }
  const cause = (err as { cause?: unknown }).cause;
  if (isGrpcServiceError(cause) && cause.code === 5) return new NotFoundError(`${what} not found`);
  if (isGrpcServiceError(cause) && UNAVAILABLE_CODES.has(cause.code)) {
    return new UnavailableError(`Temporal is unavailable: ${cause.details}`);
  }
  return err;
}

/** Runs a Temporal call and rethrows its failure as a KeelsonError where one fits. */
export async function mapErrors<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw translate(err, what);
  }
}
