/**
 * Labelled form controls: a text input, a text area or a select inside a
 * Field, its state in the parent (value and a setter of the new value).
 */
import { type InputHTMLAttributes, type ReactNode, type TextareaHTMLAttributes, useState } from "react";
import { enumName } from "./format.js";
import { Field } from "./page.js";

interface Labelled<V> {
  label: string;
  id: string;
  hint?: ReactNode;
  value: V;
  onChange: (value: V) => void;
}

interface Checked {
  /** Whether the value is invalid: false, or what is wrong (shown as the hint); sets aria-invalid. */
  invalid?: string | false;
}

/** The hint and aria-invalid of a checked control. */
function checked(invalid: string | false | undefined, hint: ReactNode) {
  if (invalid === undefined) return { hint, aria: {} };
  return { hint: invalid === false ? hint : invalid, aria: { "aria-invalid": invalid !== false } };
}

type InputProps = Omit<InputHTMLAttributes<HTMLInputElement>, "id" | "value" | "onChange">;
type TextAreaProps = Omit<TextareaHTMLAttributes<HTMLTextAreaElement>, "id" | "value" | "onChange">;

/** A text control's Field props, its own props (id, value, aria-invalid) and the rest, for the element. */
function textControl<R extends object>(props: Labelled<string> & Checked & R) {
  const { label, id, hint, invalid, value, onChange, ...rest } = props;
  const c = checked(invalid, hint);
  return { field: { label, id, hint: c.hint }, own: { id, value, ...c.aria }, onChange, rest };
}

/** A text input; the other props (required, inputMode, ...) go to the input. */
export function TextField(props: Labelled<string> & Checked & InputProps) {
  const t = textControl(props);
  return (
    <Field {...t.field}>
      <input {...t.own} onChange={(e) => t.onChange(e.target.value)} {...t.rest} />
    </Field>
  );
}

/** A text area; the other props (rows, aria-describedby, ...) go to the text area. */
export function TextAreaField(props: Labelled<string> & Checked & TextAreaProps) {
  const t = textControl(props);
  return (
    <Field {...t.field}>
      <textarea {...t.own} onChange={(e) => t.onChange(e.target.value)} {...t.rest} />
    </Field>
  );
}

/** A select of strings, each shown as itself; `any` adds a first option "Any" of that value. */
export function SelectField({
  options,
  any,
  label,
  id,
  hint,
  value,
  onChange,
}: Labelled<string> & { options: readonly string[]; any?: string }) {
  return (
    <Field label={label} id={id} hint={hint}>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value)}>
        {any !== undefined && <option value={any}>Any</option>}
        {options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </Field>
  );
}

/**
 * A select of enum values, each shown by its name; `any` (the enum's
 * UNSPECIFIED value, for a filter) adds a first option "Any".
 */
export function EnumSelect<V extends number>({
  enumType,
  options,
  any,
  label,
  id,
  hint,
  value,
  onChange,
}: Labelled<V> & { enumType: EnumObject; options: readonly V[]; any?: V }) {
  return (
    <Field label={label} id={id} hint={hint}>
      <select id={id} value={value} onChange={(e) => onChange(Number(e.target.value) as V)}>
        {any !== undefined && <option value={any}>Any</option>}
        {options.map((o) => (
          <option key={o} value={o}>
            {enumName(enumType, o)}
          </option>
        ))}
      </select>
    </Field>
  );
}

type EnumObject = Record<number | string, string | number>;

/** A list's filter on an enum field: its values, the one selected ("any" to start with) and its clause. */
export interface EnumFilter<V extends number> {
  enumType: EnumObject;
  options: readonly V[];
  any: V;
  value: V;
  onChange: (value: V) => void;
  /** `field = NAME`, or "" for any. */
  clause: string;
}

export function useEnumFilter<V extends number>(
  field: string,
  enumType: EnumObject,
  any: V,
  options: readonly V[],
): EnumFilter<V> {
  const [value, setValue] = useState<V>(any);
  return {
    enumType,
    options,
    any,
    value,
    onChange: setValue,
    clause: enumClause(field, enumType, value, any),
  };
}

/** The select of an enum filter, "Any" first. */
export function EnumFilterSelect<V extends number>({
  label,
  id,
  filter,
}: {
  label: string;
  id: string;
  filter: EnumFilter<V>;
}) {
  return (
    <EnumSelect
      label={label}
      id={id}
      enumType={filter.enumType}
      any={filter.any}
      options={filter.options}
      value={filter.value}
      onChange={filter.onChange}
    />
  );
}

/** A list filter of clauses (`state = COMPLETED`) joined by AND; empty clauses are dropped. */
export function andFilter(...clauses: string[]): string {
  return clauses.filter((f) => f !== "").join(" AND ");
}

/** `field = NAME` for an enum filter, or "" when it is the unspecified value (any). */
export function enumClause(field: string, enumType: EnumObject, value: number, any: number): string {
  return value === any ? "" : `${field} = ${enumName(enumType, value)}`;
}
