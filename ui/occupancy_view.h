#pragma once
// Occupancy per config of the selected shape and ncols: registers, LDS (shared memory), waves per SIMD
// (warps per SM) and the limiting resource, in the vocabulary of the device's vendor, with the
// default and the winner marked and the configs it cannot show explained — for the recording device
// (the runtime's kernel attributes in the session) or for any AMD target from the compiled code
// objects (static analysis: works without that GPU).
#include <QWidget>
#include <atomic>
#include <map>
#include <set>

#include "session_doc.h"
#include "temper/codeobject.h"

#include <QElapsedTimer>

#include "temper/kernel_cache.h"

class QComboBox;
class QTimer;
class QLabel;
class QPushButton;
class QTableWidget;
class QThread;

namespace temper::ui {

class OccupancyView : public QWidget {
  Q_OBJECT
 public:
  explicit OccupancyView(SessionDocument* doc, QWidget* parent = nullptr);
  ~OccupancyView() override;
  // "" = the recording device; else an AMD arch ("gfx90a").
  void setTarget(const QString& arch);
  void setCodeObjectDir(const QString& dir);
  QTableWidget* table() const { return table_; }
  QString noteText() const;
  QComboBox* targets() const { return target_; }

 private:
  void rebuild();
  // Headers in the vendor's words (CUDA: SM, warps, shared memory; AMD: CU, waves/SIMD, LDS, VGPR/SGPR,
  // and an AGPR column, which CUDA has no counterpart of and hides).
  void setVocabulary(bool nvidia);
  // `mark`: "default", "★ winner" or "" (shown with the config, as the CLI marks them).
  void fillRow(int row, Config c, const QString& mark, const KernelResources& k, const Occupancy& o, const GpuSpec& g);
  // Blocks count per CU, per WGP on RDNA (docs/occupancy.md): the blocks column names its unit.
  void setUnitHeader(const GpuSpec& g);
  const std::vector<ConfigOccupancy>& staticFor(const std::string& arch);
  // Code objects of (type, ncols) for an arch the build lacks: from the kernel cache, else compiled
  // in the background (progress in the note, Cancel); rebuild() shows them once there.
  void compileOnDemand(const std::string& arch, GgmlType type, int ncols);
  void stopCompile();
  // The compile note from the last report, its elapsed time and ETA moved on to now.
  void showCompileProgress();

  SessionDocument* doc_;
  QComboBox* target_;
  QLabel* note_;
  QTableWidget* table_;
  QString codeobj_dir_;
  std::map<std::string, std::vector<ConfigOccupancy>> cache_;
  std::map<std::string, QString> load_errors_;
  QPushButton* cancelCompile_;
  QThread* compiler_ = nullptr;
  std::atomic<bool> compileCancel_{false};
  QString compileNote_;                   // progress or failure of the last on-demand compile
  QString compileWhat_;                   // "gfx942 code objects for q4_K ncols 1"
  CompileProgress compileProgress_;       // the compiler's last report, and how long ago it came:
  QElapsedTimer sinceProgress_;           // a timer ticks the elapsed time and the ETA in between
  QTimer* compileTick_;
  std::string compileKey_;                // "arch/type/ncols" it is about
  std::set<std::string> compiled_;        // "arch/type/ncols" already merged into cache_
};

}  // namespace temper::ui
