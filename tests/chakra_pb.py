"""Chakra trace files from Python without Python's protobuf (not a Debian dependency here): each
message is encoded by protoc (Debian's protobuf-compiler) from its text form against Chakra's
et_def.proto, and framed with its varint length, as Chakra writes traces. Used by
tests/fuzz/make_chakra_seeds.py and tests/integration/chakra_jobs.py."""
import subprocess


def encode(root, message, text):
    """The wire bytes of ChakraProtoMsg.MESSAGE given as protobuf text; ROOT: the repository."""
    return subprocess.run(["protoc", f"-I{root}/src/frontend/chakra", "--encode=ChakraProtoMsg." + message,
                           f"{root}/src/frontend/chakra/et_def.proto"],
                          input=text.encode(), capture_output=True, check=True).stdout


def frame(message):
    """MESSAGE prefixed with its length as a varint."""
    length, prefix = len(message), b""
    while True:
        byte, length = length & 0x7F, length >> 7
        if length:
            prefix += bytes([byte | 0x80])
        else:
            return prefix + bytes([byte]) + message


def metadata(root):
    """A trace's first record."""
    return frame(encode(root, "GlobalMetadata", 'version: "0.0.4"'))


def node(root, id, kind, deps=(), duration=None, attrs=()):
    """One framed node; ATTRS: (name, value field, value as protobuf text)."""
    text = f'id: {id} name: "n{id}" type: {kind} ' + "".join(f"data_deps: {d} " for d in deps)
    if duration is not None:
        text += f"duration_micros: {duration} "
    for name, field, value in attrs:
        text += f'attr {{ name: "{name}" {field}: {value} }} '
    return frame(encode(root, "Node", text))
