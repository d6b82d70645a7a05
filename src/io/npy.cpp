// NumPy .npy reader and writer (format: numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
#include <charconv>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <regex>

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
    {"<f4", DType::kFloat32}, {"<f8", DType::kFloat64}, {"|i1", DType::kInt8},  {"<i2", DType::kInt16},
    {"<i4", DType::kInt32},   {"<i8", DType::kInt64},   {"|u1", DType::kUInt8}, {"|b1", DType::kBool},
};

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::kInvalidInput, fmt::format("{}: not a valid .npy file: {}", path, what));
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
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  if (!in) bad(path, "truncated header");

  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')"))) bad(path, "no 'descr' in header");
  std::string descr = m[1];
  if (descr == "<b1") descr = "|b1";
  if (descr == "<i1") descr = "|i1";
  if (descr == "<u1") descr = "|u1";
  DType dtype = DType::kUndefined;
  for (const auto& t : kNpyTypes)
    if (descr == t.descr) dtype = t.dtype;
  if (dtype == DType::kUndefined)
    throw Error(ErrorCode::kInvalidInput,
                fmt::format("{}: dtype '{}' is not supported (supported: <f4 <f8 |i1 <i2 <i4 <i8 |u1 |b1)", path, descr));
  if (std::regex_search(header, m, std::regex(R"('fortran_order'\s*:\s*True)")))
    throw Error(ErrorCode::kInvalidInput, fmt::format("{}: Fortran-order arrays are not supported", path));
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) bad(path, "no 'shape' in header");
  Shape shape;
  std::string dims = m[1];
  std::regex dim_re(R"(\d+)");
  // The header is not trusted: a dim or a size past int64 is refused here,
  // and the data must be in the file before anything is allocated for it.
  uint64_t nbytes = dtype_size(dtype);
  bool overflow = false;
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), dim_re); it != std::sregex_iterator(); ++it) {
    std::string text = it->str();
    int64_t dim = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), dim);
    if (ec != std::errc() || end != text.data() + text.size())
      bad(path, fmt::format("shape dim {} is too large", text));
    shape.push_back(dim);
    if (dim != 0 && nbytes > static_cast<uint64_t>(INT64_MAX) / static_cast<uint64_t>(dim)) overflow = true;
    nbytes *= static_cast<uint64_t>(dim);
  }
  if (overflow) bad(path, fmt::format("shape {} is too large", shape_to_string(shape)));
  std::streampos data_start = in.tellg();
  in.seekg(0, std::ios::end);
  uint64_t available = static_cast<uint64_t>(in.tellg() - data_start);
  in.seekg(data_start);
  if (!in || available < nbytes)
    bad(path, fmt::format("data is shorter than the {} bytes that {} {} needs", nbytes, dtype_name(dtype),
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
  // Pad so that magic + version + length + header is a multiple of 64, ending in '\n'.
  size_t total = 6 + 2 + 2 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: cannot open for writing", path));
  out.write(kMagic, 6);
  const char version[2] = {1, 0};
  out.write(version, 2);
  uint16_t len = static_cast<uint16_t>(header.size());
  const char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(len_bytes, 2);
  out << header;
  out.write(static_cast<const char*>(tensor.raw()), static_cast<std::streamsize>(tensor.nbytes()));
  if (!out) throw Error(ErrorCode::kIo, fmt::format("{}: write failed", path));
}

}  // namespace hetsched
