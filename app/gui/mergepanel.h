#pragma once

#include <QWidget>
#include <cstdint>
#include <string>
#include <vector>

class QDoubleSpinBox;
class QGridLayout;
class QLabel;
class QLineEdit;

namespace rpcscope {

class MergeSet;

// The "Merged captures" dock: one row per file on the timeline, with its label (shown on its lanes), what it
// is, and its offset in ms. Editing an offset or a label asks for a re-merge; the panel never merges itself.
class MergePanel : public QWidget
{
    Q_OBJECT
public:
    explicit MergePanel(QWidget *parent = nullptr);

    // Rebuilds the rows from `set` (which must outlive the next call); `reference` is the file whose clock
    // the timeline keeps, `notes` what the last merge had to say.
    void setSources(const MergeSet *set, size_t reference, const std::vector<std::string> &notes);
    // The widgets of row `i`, for tests and keyboard focus.
    QDoubleSpinBox *offsetBox(int row) const;
    QLineEdit *labelEdit(int row) const;
    int rows() const { return int(m_offsets.size()); }

signals:
    void offsetChanged(int row, qint64 offsetNs);
    void labelEdited(int row, const QString &label);
    void removeRequested(int row);
    void addRequested();
    void resetOffsetsRequested();

private:
    QGridLayout *m_grid;
    QLabel *m_hint;
    QLabel *m_notes;
    std::vector<QDoubleSpinBox *> m_offsets;
    std::vector<QLineEdit *> m_labels;
    std::vector<QWidget *> m_rowWidgets;
};

} // namespace rpcscope
