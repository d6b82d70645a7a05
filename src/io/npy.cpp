// NumPy .npy reader and writer (format: numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "hetsched/tensor_io.h"

namespace hetsched {

namespace {

constexpr char kMagic[] = "\x93NUMPY";

struct NpyType {
  const char* descr;
  DType dtype;
};
constexpr NpyType kNpyTypes[] = {
    {"<f4", DType::kFloat32}, {"<f8", DType::kFloat64}, {"<f2", DType::kFloat16}, {"|i1", DType::kInt8},
    {"<i2", DType::kInt16},   {"<i4", DType::kInt32},   {"<i8", DType::kInt64},   {"|u1", DType::kUInt8},
    {"|b1", DType::kBool},    {"<u2", DType::kUInt16},  {"<u4", DType::kUInt32},  {"<u8", DType::kUInt64},
};

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::kInvalidInput, fmt::format("{}: not a valid .npy file: {}", path, what));
}

// The header is a Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// read by hand: it may be up to 1 MiB long, which std::regex's recursive
// matcher cannot scan without exhausting the stack.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

class HeaderReader {
 public:
  HeaderReader(const std::string& text, const std::string& path) : text_(text), path_(path) {}

  NpyHeader read() {
    NpyHeader header;
    bool has_descr = false, has_shape = false;
    expect('{');
    while (!peek('}')) {
      std::string key = quoted("a quoted key");
      expect(':');
      if (key == "descr") {
        header.descr = quoted("'descr' as a quoted dtype string (structured dtypes are not supported)");
        has_descr = true;
      } else if (key == "fortran_order") {
        header.fortran_order = boolean();
      } else if (key == "shape") {
        header.shape = shape();
        has_shape = true;
      } else {
        bad(path_, fmt::format("unknown header key '{}' (expected descr, fortran_order, shape)", key));
      }
      if (peek('}')) break;
      expect(',');
    }
    if (!has_descr) bad(path_, "no 'descr' in header");
    if (!has_shape) bad(path_, "no 'shape' in header");
    return header;
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  // Skips the next non-space character when it is `c`.
  bool peek(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!peek(c)) bad(path_, fmt::format("header: expected '{}' at offset {}", c, pos_));
  }
  std::string quoted(const char* what) {
    skip_space();
    char quote = pos_ < text_.size() ? text_[pos_] : '\0';
    if (quote != '\'' && quote != '"') bad(path_, fmt::format("header: expected {} at offset {}", what, pos_));
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string::npos) bad(path_, fmt::format("header: unterminated string at offset {}", pos_));
    std::string value = text_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return value;
  }
  bool boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{"True", true}, {"False", false}})
      if (text_.compare(pos_, std::strlen(word), word) == 0) {
        pos_ += std::strlen(word);
        return value;
      }
    bad(path_, "header: 'fortran_order' must be True or False");
  }
  // (), (3,), (2, 3): dims >= 0.
  Shape shape() {
    expect('(');
    Shape dims;
    while (!peek(')')) {
      skip_space();
      size_t start = pos_;
      int64_t d = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        int digit = text_[pos_++] - '0';
        if (d > (std::numeric_limits<int64_t>::max() - digit) / 10) bad(path_, "header: a dim of 'shape' is too large");
        d = d * 10 + digit;
      }
      if (pos_ == start) bad(path_, fmt::format("header: 'shape' must be a tuple of integers >= 0 (offset {})", pos_));
      dims.push_back(d);
      if (peek(')')) break;
      expect(',');
    }
    return dims;
  }

  const std::string& text_;
  const std::string& path_;
  size_t pos_ = 0;
};

// The bytes a tensor of `shape` (dims >= 0) needs, or nullopt past int64:
// a header may claim any shape.
std::optional<uint64_t> data_bytes(const Shape& shape, uint64_t elem_size) {
  uint64_t needed = elem_size;
  for (int64_t d : shape) {
    if (d != 0 && needed > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / static_cast<uint64_t>(d))
      return std::nullopt;
    needed *= static_cast<uint64_t>(d);
  }
  return needed;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, fmt::format("{}: cannot open for reading", path));
  char magic[6] = {};
  uint8_t version[2] = {};
  in.read(magic, 6);
  in.read(reinterpret_cast<char*>(version), 2);
  if (!in || std::memcmp(magic, kMagic, 6) != 0) bad(path, "missing the \\x93NUMPY magic");
  uint32_t header_len = 0;
  if (version[0] == 1) {
    uint8_t b[2];
    in.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | (b[1] << 8);
  } else if (version[0] == 2 || version[0] == 3) {
    uint8_t b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    bad(path, fmt::format("unknown format version {}", version[0]));
  }
  if (!in || header_len > (1u << 20)) bad(path, "truncated or oversized header");
  std::string header_text(header_len, '\0');
  in.read(header_text.data(), header_len);
  if (!in) bad(path, "truncated header");

  NpyHeader header = HeaderReader(header_text, path).read();
  std::string descr = header.descr;
  if (descr == "<b1") descr = "|b1";
  if (descr == "<i1") descr = "|i1";
  if (descr == "<u1") descr = "|u1";
  DType dtype = DType::kUndefined;
  for (const auto& t : kNpyTypes)
    if (descr == t.descr) dtype = t.dtype;
  if (dtype == DType::kUndefined) {
    if (descr.size() > 32) descr = descr.substr(0, 32) + "...";
    throw Error(ErrorCode::kInvalidInput,
                fmt::format("{}: dtype '{}' is not supported (supported: <f4 <f8 |i1 <i2 <i4 <i8 |u1 |b1)", path, descr));
  }
  if (header.fortran_order)
    throw Error(ErrorCode::kInvalidInput, fmt::format("{}: Fortran-order arrays are not supported", path));

  // The data's size is checked against the file before anything is
  // allocated.
  const Shape& shape = header.shape;
  std::optional<uint64_t> needed = data_bytes(shape, dtype_size(dtype));
  if (!needed) bad(path, fmt::format("shape {} is too large", shape_to_string(shape)));
  auto data_start = in.tellg();
  in.seekg(0, std::ios::end);
  uint64_t available = static_cast<uint64_t>(in.tellg() - data_start);
  in.seekg(data_start);
  if (!in || available < *needed)
    bad(path, fmt::format("data is shorter than the {} bytes that {} {} needs", *needed, dtype_name(dtype),
                          shape_to_string(shape)));

  Tensor t(dtype, shape);
  in.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  if (!in)
    bad(path, fmt::format("data is shorter than the {} bytes that {} {} needs", t.nbytes(), dtype_name(dtype),
                          shape_to_string(shape)));
  return t;
}

void write_npy(const std::string& path, const Tensor& tensor) {
  const char* descr = nullptr;
  for (const auto& t : kNpyTypes)
    if (t.dtype == tensor.dtype()) descr = t.descr;
  if (!descr)
    throw Error(ErrorCode::kUnsupported, fmt::format("{}: cannot write dtype {} as .npy", path, dtype_name(tensor.dtype())));
  // Python tuple syntax: (), (3,), (1, 3, 4).
  std::string shape;
  for (size_t i = 0; i < tensor.shape().size(); ++i) shape += (i ? ", " : "") + std::to_string(tensor.shape()[i]);
  if (tensor.rank() == 1) shape += ",";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, shape);
  // Format 1.0 holds the header's length in 2 bytes; a longer header (a
  // tensor of very high rank) needs 2.0, with 4 (as NumPy does).
  int version = header.size() + 1 + 10 + 63 > 0xffff ? 2 : 1;
  size_t length_bytes = version == 1 ? 2 : 4;
  // Pad so that magic + version + length + header is a multiple of 64, ending in '\n'.
  size_t total = 6 + 2 + length_bytes + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: cannot open for writing", path));
  out.write(kMagic, 6);
  const char version_bytes[2] = {static_cast<char>(version), 0};
  out.write(version_bytes, 2);
  uint32_t len = static_cast<uint32_t>(header.size());
  const char len_bytes[4] = {static_cast<char>(len & 0xff), static_cast<char>((len >> 8) & 0xff),
                             static_cast<char>((len >> 16) & 0xff), static_cast<char>(len >> 24)};
  out.write(len_bytes, static_cast<std::streamsize>(length_bytes));
  out << header;
  out.write(static_cast<const char*>(tensor.raw()), static_cast<std::streamsize>(tensor.nbytes()));
  if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: write failed", path));
}

}  // namespace hetsched
