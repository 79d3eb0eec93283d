import Rewind
import RewindJournal

/// The records one event touched, as `rewind show` reports them: found by applying the event
/// through a registered model that reads it, or, without one, inferred from the identifiers in
/// its fields (and saying why no model applied it).
enum Touched {
  /// Applied with change recording to the state before it.
  case applied(model: String, effect: EventEffect)
  /// A checkpoint record (a checkpoint, a mark or a mark's digest): it changes nothing.
  case checkpoint
  /// The identifiers in the event's fields, each with its field; `why` no model applied it.
  case inferred(why: String, ids: [(field: String, id: String)])

  /// - Parameters:
  ///   - model: the registration named by `--model`, if given.
  /// - Throws: `UsageError` when `model` names no registered model. A model that cannot apply
  ///   the event (or replay up to it) is no error: the result is then `.inferred` with the reason.
  init(_ event: AuditedEvent, directory: String, model name: String?, context: RewindTool.Context) throws {
    let sequence = event.sequence
    let inferred = { (why: String) in Touched.inferred(why: why, ids: event.namedIdentifiers) }
    guard let header = event.header else {
      self = inferred("the record is not a Rewind event")
      return
    }
    guard !Checkpoint.recordNames.contains(header.name) else {
      self = .checkpoint
      return
    }
    let model: ModelRegistration
    if let name {
      model = try context.registration(named: name)
    } else {
      let known = context.models.map(\.name).joined(separator: ", ")
      let readers = context.models.filter { $0.reads(header.name, header.version) }
      guard !context.models.isEmpty else {
        self = inferred("this rewind has no registered model; an app's own rewind registers its models")
        return
      }
      guard !readers.isEmpty else {
        self = inferred("no registered model (\(known)) reads \(header.name) v\(header.version)")
        return
      }
      if readers.count == 1 {
        model = readers[0]
      } else {
        let journalReaders = (try? context.readers(of: directory))?.readers ?? []
        guard let only = journalReaders.count == 1 ? journalReaders.first : nil else {
          let names = readers.map(\.name).joined(separator: ", ")
          self = inferred("several registered models (\(names)) read \(header.name); pick one with --model NAME")
          return
        }
        model = only
      }
    }
    guard model.reads(header.name, header.version) else {
      self = inferred("model \(model.name) does not read \(header.name) v\(header.version)")
      return
    }
    let progress = ProgressLine("show: replaying", context: context)
    defer { progress.finish() }
    do {
      let session = try model.open(directory, .oneShot)
      session.progress = progress.callback
      guard let effect = try session.effect(of: sequence) else {
        self = inferred("model \(model.name) sees no event at sequence \(sequence)")
        return
      }
      self = .applied(model: model.name, effect: effect)
    } catch {
      self = inferred("model \(model.name) cannot replay up to sequence \(sequence): \(error)")
    }
  }

  /// The `touched` section of `rewind show`, for people: its text made `visible`, its values JSON.
  func lines(sequence: UInt64) -> [String] {
    let indent = "            "
    switch self {
    case .checkpoint:
      return ["  touched   nothing: checkpoint records (a checkpoint, a mark or a digest) change no record"]
    case .inferred(let why, let ids):
      var lines = [visible("  touched   inferred from the identifiers in its fields, not applied (\(why))")]
      if ids.isEmpty { lines.append(indent + "(its fields name no record)") }
      for item in ids { lines.append(indent + visible("\(item.id) (field \(item.field))")) }
      return lines
    case .applied(let model, let effect):
      guard !effect.keys.isEmpty else {
        return [visible("  touched   nothing: applied with model \(model), the event changed no record")]
      }
      var lines = [visible("  touched   applied with model \(model) to the state after sequence \(sequence - 1):")]
      // Every key but the groups (shown below), named as --json's "keys" name it; each with its
      // record, when there is one.
      for key in effect.keys where key.kind != .group {
        guard let record = effect.record(of: key) else {
          lines.append(indent + visible("\(key) touched (no record value to show)"))
          continue
        }
        lines.append(indent + visible("\(key) \(record.change.rawValue)"))
        if record.change == .updated, let before = record.before, let after = record.after,
          let changed = StateInspector.changedFields(before: before, after: after)
        {
          // Of an updated record, the fields that changed: a long note body edited once is not
          // shown twice to find the tag that was added.
          lines.append(indent + "  before " + changed.before)
          lines.append(indent + "  after  " + changed.after)
          continue
        }
        if record.change == .updated || record.change == .removed, let before = record.before {
          lines.append(indent + "  before " + StateInspector.json(before))
        }
        if let after = record.after { lines.append(indent + "  after  " + StateInspector.json(after)) }
      }
      let groups = effect.keys.filter { $0.kind == .group }
      if !groups.isEmpty {
        lines.append(
          visible("  groups    " + groups.map(\.description).joined(separator: ", ") + " (grouping-cache keys)"))
      }
      return lines
    }
  }

  /// The `touched` object of `rewind show --json`.
  var json: String {
    switch self {
    case .checkpoint:
      return #"{"from":"checkpoint","records":[]}"#
    case .inferred(let why, let ids):
      let records = ids.map { #"{"field":\#(jsonString($0.field)),"id":\#(jsonString($0.id))}"# }
      return #"{"from":"payload","why":\#(jsonString(why)),"records":[\#(records.joined(separator: ","))]}"#
    case .applied(let model, let effect):
      let records = effect.records.map { record in
        #"{"key":\#(jsonString(effect.keyName(of: record))),"store":\#(jsonString(record.store)),"#
          + #""id":\#(jsonString(record.id)),"#
          + #""change":"\#(record.change.rawValue)","before":\#(record.before.map(StateInspector.json) ?? "null"),"#
          + #""after":\#(record.after.map(StateInspector.json) ?? "null")}"#
      }
      let keys = effect.keys.map { jsonString($0.description) }
      return #"{"from":"model","model":\#(jsonString(model)),"records":[\#(records.joined(separator: ","))],"#
        + #""keys":[\#(keys.joined(separator: ","))]}"#
    }
  }
}

extension EventEffect {
  /// The record among `records` that `key` names; nil for a group, or a key with no record.
  func record(of key: ChangeKey) -> TouchedRecord? { records.first { Self.key(key, names: $0) } }

  /// `record`'s key as `keys` (and `rewind show`'s text) name it.
  func keyName(of record: TouchedRecord) -> String {
    keys.first { Self.key($0, names: record) }?.description
      ?? (record.id.isEmpty ? record.store : "\(record.store)/\(record.id)")
  }

  /// Whether `key` names `record`, as `TimeMachine.effect(of:)` makes records of keys: of the
  /// key's store, with the key as the id (empty for a value store); a group names none.
  private static func key(_ key: ChangeKey, names record: TouchedRecord) -> Bool {
    key.kind != .group && key.store == record.store && (key.kind == .value ? "" : key.key) == record.id
  }
}
